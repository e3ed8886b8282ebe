"""The embedding wing: the ``Embedder`` protocol, the runtimes that implement it (torch, ONNX, int8,
the OpenVINO bulk model), the embedder a config asks for, and the query-vector cache."""
