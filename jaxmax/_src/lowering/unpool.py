"""Max unpooling (ONNX MaxUnpool): ``out.flat[I] = X`` over zeros, the last writer winning.

Two forms, chosen at run time by a check on `I`:

* *dense*, when the kernel does not exceed the stride on any axis and every index lies in its
  own window (``I[n, c, p]`` names an element of window ``p`` of plane ``(n, c)``, which is how
  MaxPool's indices are made): the windows are disjoint, so no index repeats and each output
  element is written by the one ``X`` element whose window holds it. The output is assembled
  as ``where(I == target_a, X, 0)`` for every window offset ``a``, interleaved by a reshape: one
  pass, no scatter.
* *scatter*, in general: ``winner = full(-1).at[I].max(position in X)`` names the last writer of
  each output element (``max`` is order-free, so the answer is deterministic), and the output
  gathers ``X`` there. The gather reads ``X`` bitcast to unsigned integers: XLA may split a
  gather over devices and add up the pieces, which would turn ``-0.0`` into ``+0.0``; integers
  add up exactly. Out-of-range indices (only possible when `I` is traced) are dropped.

The derivative with respect to `X` gathers the output cotangent at `I` and keeps it only for
each index's last writer (0 for an overwritten duplicate or a dropped index): in the scatter
form the transposed gather sends each output element's cotangent to its last writer.
"""

from __future__ import annotations

import itertools
import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src import auto_partition, explicit_axes, linear_calls
from jaxmax._src.lowering import compile_options, order, rules, unpool_sharded


def max_unpool(x: jax.Array, indices: jax.Array, out_shape: tuple[int, ...],
               kernel: tuple[int, ...], strides: tuple[int, ...],
               pads_begin: tuple[int, ...]) -> jax.Array:
    """MaxUnpool of ``(N, C, *spatial)`` `x` with flat `indices` (of `x`'s shape) into
    `out_shape`; `kernel`, `strides` and `pads_begin` describe the pooling windows used by the
    dense form's check."""
    return _unpool_jit(x, indices, out_shape, kernel, strides, pads_begin,
                       rules.several_devices())


@compile_options.jit(static_argnames=("out_shape", "kernel", "strides", "pads_begin", "auto"))
def _unpool_jit(x, indices, out_shape, kernel, strides, pads_begin, auto=False):
    """The unpooling; `X` sharded along one axis over ``Explicit`` mesh axes takes
    `unpool_sharded.across_devices`. On ``Auto`` axes (`auto`: several devices in the process,
    no sharding in the inputs' types) the same per-device form is chosen once XLA knows the
    sharding (`_on_auto_axes`)."""
    if x.size == 0 or math.prod(out_shape) == 0:
        return jnp.zeros(out_shape, x.dtype)
    sharded = unpool_sharded.across_devices(x, indices, out_shape)
    if sharded is not None:  # X sharded along one axis over Explicit mesh axes
        return sharded

    def compute(x, indices):
        scatter = partial(_scatter, out_shape=out_shape)
        if not all(k <= s for k, s in zip(kernel, strides, strict=True)):
            return scatter(x, indices)
        targets = _targets(x.shape, out_shape, kernel, strides, pads_begin, indices.dtype)
        own = jnp.zeros(indices.shape, bool)
        for target, valid in targets:
            own = own | ((indices == target) & valid)
        dense = partial(_dense, out_shape=out_shape, strides=strides, pads_begin=pads_begin)
        return lax.cond(jnp.all(own), dense, scatter, x, indices)

    def out_spec(mesh):
        return explicit_axes.divisible(mesh, explicit_axes.spec_of(x), out_shape)

    if auto and not (explicit_axes.names_of(x) or explicit_axes.names_of(indices)):
        return _on_auto_axes(x, indices, out_shape, compute)
    return explicit_axes.run(compute, (x, indices), out_spec)


def _on_auto_axes(x, indices, out_shape, compute):
    """``compute(x, indices)`` where XLA chooses the sharding
    (:mod:`jaxmax._src.auto_partition`): `X` sharded along one axis (evenly), `I` sharded alike
    or replicated, by `unpool_sharded.plan`, the output sharded as `X`: a spatial output axis
    whose length is a multiple of `X`'s keeps its sharding (a compound factor of the sharding
    rule: the block of `X`'s rows a device holds names a block as many times as long of the
    output's), any other is replicated; the inputs are gathered otherwise. The derivative is
    the one-device form's, laid out the same way: the unpooling is linear in `X`, so its
    tangent is the planned call on `X`'s tangent, and its transpose (the output cotangent at
    each element's index when it is that index's last writer) is taken by each device for its
    own elements (`linear_calls`), from a replicated cotangent where it lies."""
    multiples = [out_shape[a] // x.shape[a] if out_shape[a] % x.shape[a] == 0 else None
                 for a in range(2, len(out_shape))]
    kept = ((0, 0), (0, 1)) + tuple(None if m is None else (0, a + 2, m)
                                    for a, m in enumerate(multiples))

    def out_spec(sx):
        return tuple(sx[:2]) + tuple(None if m is None else e
                                     for e, m in zip(sx[2:], multiples, strict=True))

    def planned(mesh, sx, si, linear=False, out=None):
        if not auto_partition.even(mesh, sx, x.shape):
            return None
        return unpool_sharded.plan(tuple(x.shape), sx, si, mesh, out_shape,
                                   out_spec(sx) if out is None else out, linear=linear)

    def planner(mesh, specs):
        sx, si = specs
        per_device = planned(mesh, sx, si)
        if per_device is None:
            return None
        return auto_partition.Plan(lambda xb, ib: (per_device(xb, ib),), (sx, si),
                                   (out_spec(sx),))

    def transpose_planner(mesh, specs):  # (X, I, the output cotangent) -> X's cotangent
        sx, si, sct = specs
        # a replicated cotangent (a loss's weights) is read where it lies: the transpose of
        # the placement onto a replicated output, where that onto X's layout would gather it
        ct_spec = out_spec(sx) if any(e is not None for e in sct) else (None,) * len(sct)
        linear = planned(mesh, sx, si, linear=True, out=ct_spec)
        if linear is None:
            return None

        def per_device(xb, ib, ct):
            return jax.vjp(lambda v: linear(v, ib), jnp.zeros_like(xb))[1](ct)
        return auto_partition.Plan(per_device, (sx, si, ct_spec), (sx,))

    def plain(v, i):
        return (compute(v, i),)

    def plain_transpose(like, i, ct):
        return jax.vjp(lambda v: compute(v, i), jnp.zeros_like(like))[1](ct)

    def jvp(primals, tangents, out):
        # linear in X: the tangent is the unpooling of X's tangent (the planned call itself),
        # and its transpose is planned too (each device's own elements' cotangents)
        del out
        (v, i), t = primals, tangents[0]
        if not linear_calls.available():
            return jax.jvp(lambda w: plain(w, i), (v,), (t,))[1]

        def forward(residuals, tangent):
            return auto_partition.call(plain, planner, (tangent[0], residuals[1]), kept=(kept,))

        def transpose(residuals, cotangent):
            # the cotangent's axes untied from X's: a replicated one stays replicated
            # (`transpose_planner` reads it where it lies)
            return auto_partition.call(plain_transpose, transpose_planner,
                                       (*residuals, *cotangent),
                                       kept=(tuple((0, a) for a in range(v.ndim)),))
        return linear_calls.call(forward, transpose, (lax.stop_gradient(v), i), (t,))

    return auto_partition.call(plain, planner, (x, indices), kept=(kept,), jvp=jvp)[0]


def _targets(x_shape, out_shape, kernel, strides, pads_begin, dtype):
    """For every window offset ``a`` (``a_d < k_d``): the flat output index that offset names
    for each element of `x` (computed from iotas inside the trace), and whether that element
    lies inside the output (a small constant over the spatial axes)."""
    n_spatial = len(kernel)
    plane = math.prod(out_shape[2:])
    out_strides = [math.prod(out_shape[3 + d:]) for d in range(n_spatial)]
    dtype = np.dtype(dtype).type
    base = ((lax.broadcasted_iota(dtype, x_shape, 0) * dtype(out_shape[1])
             + lax.broadcasted_iota(dtype, x_shape, 1)) * dtype(plane))
    for d in range(n_spatial):
        coord = lax.broadcasted_iota(dtype, x_shape, 2 + d) * dtype(strides[d])
        base = base + (coord - dtype(pads_begin[d])) * dtype(out_strides[d])
    result = []
    for offset in itertools.product(*(range(k) for k in kernel)):
        valid = np.ones((1, 1) + (1,) * n_spatial, bool)
        shift = 0
        for d in range(n_spatial):
            shape = [1] * (2 + n_spatial)
            shape[2 + d] = x_shape[2 + d]
            q = (np.arange(x_shape[2 + d]) * strides[d] - pads_begin[d] + offset[d]).reshape(shape)
            valid = valid & (q >= 0) & (q < out_shape[2 + d])
            shift += offset[d] * out_strides[d]
        result.append((base + dtype(shift), jnp.asarray(valid)))
    return result


def _dense(x, indices, *, out_shape, strides, pads_begin):
    """Each output element from the one window that holds it: ``X`` where `I` names it.

    ``X`` and ``I`` are repeated `strides` times along each spatial axis (a broadcast and a
    reshape, which XLA fuses into the output's loop), so element ``j`` of an axis belongs to
    window ``j // s`` and is output coordinate ``j - pads_begin``; it takes ``X`` where ``I``
    equals its own flat output index. Once every index is known to lie in its own window, that
    equality holds exactly at the element ``I`` names. The result is cropped or extended to
    the output (elements no window reaches stay ``+0``)."""
    n_spatial = len(strides)
    dtype = np.dtype(indices.dtype).type
    spread_shape = tuple(x.shape[:2]) + tuple(x.shape[2 + d] * strides[d]
                                               for d in range(n_spatial))

    def spread(a):
        expanded = a.reshape(tuple(a.shape[:2]) + tuple(
            v for d in range(n_spatial) for v in (a.shape[2 + d], 1)))
        wide = jnp.broadcast_to(expanded, tuple(a.shape[:2]) + tuple(
            v for d in range(n_spatial) for v in (a.shape[2 + d], strides[d])))
        return wide.reshape(spread_shape)

    plane = math.prod(out_shape[2:])
    flat = (lax.broadcasted_iota(dtype, spread_shape, 0) * dtype(out_shape[1])
            + lax.broadcasted_iota(dtype, spread_shape, 1)) * dtype(plane)
    for d in range(n_spatial):
        coord = lax.broadcasted_iota(dtype, spread_shape, 2 + d) - dtype(pads_begin[d])
        flat = flat + coord * dtype(math.prod(out_shape[3 + d:]))
    zero = jnp.zeros((), x.dtype)
    spread_y = jnp.where(spread(indices) == flat, spread(x), zero)
    config = [(0, 0, 0), (0, 0, 0)] + [
        (-pads_begin[d], out_shape[2 + d] - (spread_shape[2 + d] - pads_begin[d]), 0)
        for d in range(n_spatial)]
    return lax.pad(spread_y, zero, config)


def _scatter(x, indices, *, out_shape):
    size = math.prod(out_shape)
    flat_i = indices.reshape(-1)
    count = flat_i.shape[0]
    pos_dtype = jnp.int32 if count < 2**31 else jnp.int64
    valid = flat_i >= 0
    if size - 1 < jnp.iinfo(flat_i.dtype).max:
        valid = valid & (flat_i < size)
    at = jnp.where(valid, flat_i, 0)
    positions = lax.iota(pos_dtype, count)
    winner = jnp.full((size,), -1, pos_dtype).at[at].max(
        jnp.where(valid, positions, pos_dtype(-1)), indices_are_sorted=False,
        unique_indices=False)
    return _place(x.reshape(-1), winner).reshape(out_shape)


def _exact_take(values: jax.Array, at: jax.Array) -> jax.Array:
    """``values[at]`` (`at` in range), gathered as unsigned integers (`order.bits`) so that a
    gather split over devices cannot change a zero's sign."""
    return order.from_bits(jnp.take(order.bits(values), at, mode="clip"), values.dtype)


@jax.custom_jvp
def _place(flat_x, winner):
    """``flat_x[winner]`` where ``winner >= 0``, else ``+0``; exact on any sharding. Its
    derivative is the same selection by a plain gather (linear, so reverse mode transposes it
    into the scatter of the cotangent to each last writer)."""
    written = winner >= 0
    taken = _exact_take(flat_x, jnp.where(written, winner, 0))
    return jnp.where(written, taken, jnp.zeros((), flat_x.dtype))


@_place.defjvp
def _place_jvp(primals, tangents):
    flat_x, winner = primals
    written = winner >= 0
    t = tangents[0]
    tangent = jnp.where(written, jnp.take(t, jnp.where(written, winner, 0), mode="clip"),
                        jnp.zeros((), t.dtype))
    return _place(flat_x, winner), tangent
