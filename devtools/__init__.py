"""Tools for developers, not the product: the local demo (`./tally up`) and the benchmarks."""
