"""Managing memory by hand: listing it, editing it, its history, export and import, and erasing a namespace."""
