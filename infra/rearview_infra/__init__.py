"""Rearview's AWS deployment as CDK constructs: one module per part, composed by `stack.RearviewStack`."""

from rearview_infra.stack import RearviewProps, RearviewStack

__all__ = ["RearviewProps", "RearviewStack"]
