"""The operations of Rearview, each declared once (`catalogue`): what it takes and answers, the permission it needs,
the service call, and how HTTP, MCP, the command line and the Python client offer it. The edges derive their
routes, tools, commands and calls from it."""
