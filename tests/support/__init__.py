"""What the tests share: factories, EWT slices, a toy crowd, servers, workers and receivers."""
