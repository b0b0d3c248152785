"""What every app of Tally shares: domain errors, the API's plumbing, project permissions."""
