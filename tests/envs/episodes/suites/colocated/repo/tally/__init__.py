"""Small counting helpers; their tests live inside the package."""
