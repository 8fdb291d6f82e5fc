"""Services: the logic of write, recall, forget and consolidate, free of any cloud SDK."""
