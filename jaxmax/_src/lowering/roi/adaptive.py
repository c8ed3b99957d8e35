"""RoiAlign with ``sampling_ratio = 0``: every ROI's grid ``ceil(bin)`` depends on its (possibly
traced) size, so the samples are visited by a loop whose trip count is computed at run time.

Per bin and axis a window of at most ``2*L + 6`` sample indices, starting at ``lo``, holds every
sample that can fall inside a map of ``L`` pixels (the spacing ``bin / ceil(bin)`` is > 1/2 when
the grid has more than one sample). The ROIs come in blocks (of similar windows, sorted by the
caller); one ``while`` loop visits block ``b``'s ``need_y x need_x`` window indices (the largest
window a ROI of the block needs) in row-major order, masking each ROI's samples past its own
grid, then block ``b + 1``'s. The samples a window skips are out of the image (value ``+0.0``):
they are folded in at their place in the row-major order. So the program does not depend on
the ROIs, and no grid is ever too small (docs/semantics.md §12.4).

One loop for all the blocks, not a loop per block: XLA:CPU compiles every kernel on its own, and
a nested loop's outer body (the block's slices, its loop-invariant geometry, its scalars) was a
dozen kernels more. The body reads its block's rows by a dynamic slice, carries the block's
accumulator and writes it out under a ``lax.cond`` when the block is done.

A while loop cannot be transposed by reverse-mode autodiff: the loop is a ``jax.custom_vjp``
whose backward pass runs the same loop (the blocks in reverse) and pulls each sample's
cotangent back through the sample's own formula (``jax.vjp`` of one step), so the data gets the
bilinear weights and the ROI coordinates their almost-everywhere derivative.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmax._src.lowering import order
from jaxmax._src.lowering.roi import samples


def window_size(length: int) -> int:
    """Sample indices per bin and axis that can fall inside a map of `length` pixels when the
    grid holds more than one sample (spacing > 1/2), with a margin for the estimate."""
    return 2 * length + 6


def skipped(gh, gw, lo_y, lo_x, ky_n: int, kx_n: int):
    """Bins whose grid holds samples outside the window (all out of the image, value +0), and
    the first of them in row-major order: ``(any, iy, ix)``, each (R, P_h, P_w)."""
    gh, gw = gh[:, None, None], gw[:, None, None]
    ly, lx = lo_y[:, :, None], lo_x[:, None, :]
    some = (gh > 0) & (gw > 0)
    front = (ly > 0) | (lx > 0)
    right = gw > lx + kx_n
    below = gh > ly + ky_n
    zero = jnp.zeros_like(ly + lx)
    oy = jnp.where(front | right, zero, ly + ky_n)
    ox = jnp.where(front | ~right, zero, lx + kx_n)
    return some & (front | right | below), oy, ox


def pool(step, flat, geometry, ints, *, face: str, mode: str, lowest, shape):
    """The loop over every block's window of samples: (blocks, B, P_h, P_w, C) of CT, before
    the final division (ONNX's max with the skipped ``+0`` samples folded in), and OpenVINO
    max's ``pending`` flags (the skipped ``+0`` samples after every evaluated one; else None).

    `step(flat, geometry_b, rows_b, k)` (``k`` = ``[kx, ky]``, int32) gives
    ``(v, mask, iy, ix)`` of one sample of every bin of block ``b``; `geometry` (the
    differentiable ROI quantities) and ``ints["rows"]`` are pytrees with a leading axis of
    blocks, ``ints["need"]`` (blocks, 2) the window each block needs (Y, X), ``ints["count"]``
    (blocks, B) the sample counts, ``ints["skipped"]`` (max only) :func:`skipped` of every ROI
    (blocks, B, P_h, P_w). Everything per ROI is computed before the loop.
    """
    return _looped(step, face, mode, lowest, shape)(flat, geometry, ints)


def _at(b):
    """Row `b` (in range) of an array: a dynamic slice (``dynamic_index_in_dim`` would add a
    select for negative indices, a kernel of its own in a loop)."""
    def at(a):
        if a.shape[0] > 1:
            a = lax.dynamic_slice_in_dim(a, b, 1, 0)
        return lax.squeeze(a, (0,))  # one block: b is 0
    return at


def _split(pos):
    """``pos``'s three scalars ``(b, kx, ky)``."""
    return tuple(lax.index_in_dim(pos, i, keepdims=False) for i in range(3))


def _advance(pos, need_y, need_x, direction: int):
    """The next sample of block ``b``'s window (``pos`` = ``[b, kx, ky]``) in row-major order,
    or the first of block ``b + direction`` after its last (an empty window visits one sample):
    ``(pos, done)``. One (3,) vector: XLA:CPU would give each scalar a kernel of its own."""
    b, kx, ky = _split(pos)
    kx = kx + 1
    wrap = kx >= need_x
    ky = jnp.where(wrap, ky + 1, ky)
    kx = jnp.where(wrap, 0, kx)
    done = ky >= need_y
    return jnp.stack([jnp.where(done, b + direction, b), kx, jnp.where(done, 0, ky)]), done


def _looped(step, face, mode, lowest, shape):
    ct = np.dtype(np.asarray(lowest).dtype)
    blocks = shape[0]
    folds = mode == "max" and face == "openvino"  # the pending +0 samples are carried
    fixes = mode == "max" and face == "onnx"  # the skipped +0 samples, when a block is done

    def block(geometry, ints, b):
        """Block `b`'s geometry and rows and its window (Y, X)."""
        at = _at(b)
        need = at(ints["need"])
        return jax.tree.map(at, geometry), jax.tree.map(at, ints["rows"]), need[0], need[1]

    def forward(flat, geometry, ints, winner: bool):
        winner = winner and mode == "max"  # the sample each output took: for the gradient
        seed = lowest if folds else np.array(-np.inf if mode == "max" else 0, ct)
        zero = jnp.zeros((), ct)

        def body(carry):
            pos, acc, win, pending, out = carry
            b, kx, ky = _split(pos)
            at = _at(b)
            g, rows, need_y, need_x = block(geometry, ints, b)
            fresh = (ky == 0) & (kx == 0)  # the block's first sample: a fresh accumulator
            acc = jnp.where(fresh, seed, acc)
            v, mask, iy, ix = step(flat, g, rows, lax.slice(pos, (1,), (3,)))
            m = mask[..., None]
            if mode == "avg":
                per_sample = jnp.maximum(at(ints["count"]), 1)[:, None, None, None]
                add = v if face == "onnx" else samples.divide(v, per_sample)
                acc = jnp.where(m, acc + add, acc)
            else:
                k = ky * jnp.maximum(need_x, 1) + kx
                if winner:
                    win = jnp.where(fresh, -1, win)
                if face == "onnx":
                    # ieee_take's order by integer keys (order.nan_top_key: neither a sample
                    # nor the accumulator is ever subnormal, being products and sums under
                    # XLA:CPU's flush to zero): its four float tests of the
                    # accumulator just reset (`fresh`) cost up to 1.4x the run time of ROIs
                    # mostly outside the image (benchmarks/roi_align_ab.py --data)
                    take = m & (order.nan_top_key(v) > order.nan_top_key(acc))
                else:
                    first = tuple(at(a) for a in ints["skipped"])
                    pending = jnp.where(fresh, first[0], pending)
                    after = (iy > first[1]) | ((iy == first[1]) & (ix > first[2]))
                    fire = (pending & after & mask)[..., None] & (zero > acc)
                    acc = jnp.where(fire, zero, acc)
                    if winner:
                        win = jnp.where(fire, -1, win)
                    pending = pending & ~(after & mask)
                    take = m & (v > acc)
                acc = jnp.where(take, v, acc)
                if winner:
                    win = jnp.where(take, k, win)

            def flush(out, parts):
                return jax.tree.map(lambda whole, part: lax.dynamic_update_index_in_dim(
                    whole, part, b, 0), out, finish(b, *parts))

            pos, done = _advance(pos, need_y, need_x, 1)
            if blocks > 1:  # one block: its accumulator is the loop's result
                out = lax.cond(done, flush, lambda out, parts: out, out, (acc, win, pending))
            return pos, acc, win, pending, out

        def finish(b, acc, win, pending):
            """A block's results when it is done: ``(acc, win, pending or fixed)``."""
            if fixes:  # order-free under the IEEE maximum; `fixed` masks the gradient
                fixed = _at(b)(ints["skipped"][0])[..., None] & samples.ieee_take(acc, zero)
                acc = jnp.where(fixed, zero, acc)
                pending = fixed if winner else None
            return acc, win, pending

        acc0 = jnp.full(shape[1:], seed, ct)
        win0 = jnp.full(shape[1:], -1, jnp.int32) if winner else None
        pending0 = jnp.zeros(shape[1:4], bool) if folds else None
        third = (jnp.zeros(shape[:4], bool) if folds else
                 jnp.zeros(shape, bool) if fixes and winner else None)
        out0 = ((jnp.zeros(shape, ct), jnp.zeros(shape, jnp.int32) if winner else None, third)
                if blocks > 1 else None)
        carry = lax.while_loop(lambda c: c[0][0] < blocks, body,
                               (jnp.zeros(3, jnp.int32), acc0, win0, pending0, out0))
        if blocks > 1:
            return carry[-1]
        return jax.tree.map(lambda a: a[None], finish(0, *carry[1:4]))

    @jax.custom_vjp
    def looped(flat, geometry, ints):
        acc, _, pending = forward(flat, geometry, ints, False)
        return acc, pending

    def fwd(flat, geometry, ints):
        acc, win, third = forward(flat, geometry, ints, True)
        pending, fixed = (third, None) if folds else (None, third)
        return (acc, pending), (flat, geometry, ints, win, fixed)

    def bwd(res, cts):  # cts[1] is the bool `pending`'s (float0) cotangent, or None
        flat, geometry, ints, win, fixed = res
        ct_acc = cts[0]
        if fixed is not None:  # the outputs that took a skipped +0 sample
            ct_acc = jnp.where(fixed, jnp.zeros_like(ct_acc), ct_acc)

        # The blocks in reverse order, each block's samples in order from a zero partial sum,
        # added to the total when the block is done: the order of a loop per block under
        # `lax.map`, whose transpose sums the data's cotangent over the blocks in reverse.
        def body(carry):
            pos, total, partial, d_geometry = carry
            b, kx, ky = _split(pos)
            at = _at(b)
            g, rows, need_y, need_x = block(geometry, ints, b)
            live = (need_y > 0) & (need_x > 0)  # an empty window's one sample adds nothing

            def sample(f, g):
                v, mask, _, _ = step(f, g, rows, lax.slice(pos, (1,), (3,)))
                return v, mask

            _, pull, mask = jax.vjp(sample, flat, g, has_aux=True)
            m = mask[..., None]
            ct_b = at(ct_acc)
            if mode == "avg":
                per_sample = jnp.maximum(at(ints["count"]), 1)[:, None, None, None]
                scale = ct_b if face == "onnx" else ct_b / per_sample
                ct_v = jnp.where(m, scale, jnp.zeros_like(scale))
            else:
                k = ky * jnp.maximum(need_x, 1) + kx
                ct_v = jnp.where(m & (at(win) == k), ct_b, jnp.zeros_like(ct_b))
            d_flat, d_g = pull(ct_v)
            partial = jnp.where(live, partial + d_flat, partial)
            d_geometry = jax.tree.map(
                lambda whole, d: lax.dynamic_update_index_in_dim(
                    whole, jnp.where(live, at(whole) + d, at(whole)), b, 0), d_geometry, d_g)
            pos, done = _advance(pos, need_y, need_x, -1)
            total, partial = lax.cond(done, lambda t, p: (t + p, jnp.zeros_like(p)),
                                      lambda t, p: (t, p), total, partial)
            return pos, total, partial, d_geometry

        start = jnp.zeros(3, jnp.int32).at[0].set(blocks - 1)
        init = (start, jnp.zeros_like(flat), jnp.zeros_like(flat),
                jax.tree.map(jnp.zeros_like, geometry))
        out = lax.while_loop(lambda c: c[0][0] >= 0, body, init)
        d_flat, d_geometry = out[1], out[3]
        d_ints = jax.tree.map(
            lambda a: (np.zeros(a.shape, jax.dtypes.float0) if not jnp.issubdtype(
                a.dtype, jnp.floating) else jnp.zeros_like(a)), ints)
        return d_flat, d_geometry, d_ints

    looped.defvjp(fwd, bwd)
    return looped
