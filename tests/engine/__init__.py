"""Engine tests: the ddflow engine against a brute-force model and the issue 9 checks."""
