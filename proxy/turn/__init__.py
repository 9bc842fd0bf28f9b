"""One turn of the tool loop: no HTTP, no paths."""
