"""Rearview inside agent frameworks, over the Python client: LangGraph's long-term memory store (`langgraph_store`)
and LangChain tools (`langchain_tools`). Each needs its framework (the `langgraph` and `langchain` extras); none is
imported here."""
