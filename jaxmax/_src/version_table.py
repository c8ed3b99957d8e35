"""A face's table of operator versions: since-version -> the data types it allows and what it
adds. Both faces pick an operator's version as the largest since-version ``<= opset``; the tables
themselves are :mod:`jaxmax._src.onnx.versions` and :mod:`jaxmax._src.openvino.versions`."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from jaxmax._src import validation


@dataclasses.dataclass(frozen=True)
class Version:
    """One since-version: the data types it allows (None: every type the adapter accepts) and
    what it adds to the one before (attributes, inputs, outputs or behaviour)."""

    dtypes: frozenset[np.dtype] | None = None
    adds: tuple[str, ...] = ()


class VersionTable(dict[str, dict[int, Version]]):
    """Operator -> since-version -> :class:`Version`, with the lookups the adapters share."""

    def since_versions(self, op: str) -> tuple[int, ...]:
        """The since-versions of `op` jaxmax implements, ascending."""
        return tuple(sorted(self[op]))

    def since_version(self, op: str, opset: int) -> int:
        """The since-version of `op` in force at `opset` (the largest one ``<= opset``)."""
        return max(s for s in self[op] if s <= opset)

    def added_in(self, op: str, what: str) -> int:
        """The since-version of `op` whose ``adds`` names `what`."""
        return next(s for s in self.since_versions(op) if what in self[op][s].adds)

    def require(self, label: str, op: str, version: int, opset: int,
                used: dict[str, bool]) -> None:
        """A ValueError naming the arguments of `used` that are set (True) when `op`-`version`
        predates them; they all come with the since-version that adds the first of them."""
        since = self.added_in(op, next(iter(used)))
        given = [name for name, value in used.items() if value]
        if given and version < since:
            names = " and ".join(f"`{name}`" for name in given)
            raise ValueError(f"{label}: {names} {'do' if len(given) > 1 else 'does'} not exist "
                             f"before opset {since} ({op}-{since}), got {op}-{version} "
                             f"(opset {opset})")

    def select(self, label: str, op: str, opset) -> tuple[int, int]:
        """``(opset, since-version)`` for a call of `op` (error prefix `label`) at the static
        `opset`; a ValueError when `op` does not exist yet at `opset`."""
        opset_ = validation.static_int(label, "opset", opset)
        first = self.since_versions(op)[0]
        if opset_ < first:
            if first == 1:
                raise ValueError(f"{label}: `opset` must be >= 1, got {opset_}")
            raise ValueError(f"{label}: {op} exists from opset {first}, got `opset` {opset_}")
        return opset_, self.since_version(op, opset_)

    def check_dtype(self, label: str, name: str, x: jax.Array, op: str, version: int,
                    opset: int) -> None:
        """A TypeError when `op`-`version` does not allow the dtype of `x` (argument `name`)."""
        allowed = self[op][version].dtypes
        if allowed is not None and x.dtype not in allowed:
            kind = "bool data is not allowed; " if x.dtype == np.bool_ else ""
            raise TypeError(
                f"{label}: `{name}` dtype {x.dtype} is not allowed by {op}-{version} "
                f"(opset {opset}); {kind}allowed: {sorted(t.name for t in allowed)}")
