"""The learning API (see learning/API.md): thin views over `learning.services` and selectors."""
