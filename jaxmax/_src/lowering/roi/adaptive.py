"""RoiAlign with ``sampling_ratio = 0``: every ROI's grid ``ceil(bin)`` depends on its (possibly
traced) size, so the samples are visited by a loop whose trip count is computed at run time.

Per bin and axis a window of at most ``2*L + 6`` sample indices, starting at ``lo``, holds every
sample that can fall inside a map of ``L`` pixels (the spacing ``bin / ceil(bin)`` is > 1/2 when
the grid has more than one sample); the loop runs over ``need_y x need_x`` indices, the largest
window any ROI needs (the largest grid, for ROIs inside the map), and masks each ROI's samples
past its own grid. The samples a window skips are out of the image (value ``+0.0``): they are
folded in at their place in the row-major order. So the program does not depend on the ROIs,
and no grid is ever too small (docs/semantics.md §12.4).

``lax.fori_loop`` with a traced trip count is a while loop, which reverse-mode autodiff cannot
transpose: the loop is a ``jax.custom_vjp`` whose backward pass runs the same loop and pulls
each sample's cotangent back through the sample's own formula (``jax.vjp`` of one step), so the
data gets the bilinear weights and the ROI coordinates their almost-everywhere derivative.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

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
    the final division, and the ``pending`` flags of OpenVINO's max (the skipped ``+0``
    samples not yet folded in).

    A loop over the blocks runs, per block ``b``, a loop over its window's samples
    ``(ky, kx)`` in row-major order (``need[b]``, computed at run time), whose body reads the
    block's rows by a dynamic index: everything per ROI is computed before the loops (XLA:CPU
    compiles every kernel of a loop body on its own).

    `step(flat, geometry_b, rows_b, ky, kx)` gives ``(v, mask, iy, ix)`` of one sample of every
    bin of block ``b``; `geometry` (the differentiable ROI quantities) and ``ints["rows"]`` are
    pytrees with a leading axis of blocks, ``ints["need"]`` (blocks, 2) the window each block
    needs (Y, X), ``ints["count"]`` (blocks, B) the sample counts, ``ints["skipped"]``
    :func:`skipped` of every ROI (blocks, B, P_h, P_w).
    """
    return _looped(step, face, mode, lowest, shape)(flat, geometry, ints)


def _at(b):
    """Row `b` (in range) of an array: a dynamic slice (``dynamic_index_in_dim`` would add a
    select for negative indices, a kernel of its own in a loop)."""
    def at(a):
        return lax.dynamic_slice(a, (b,) + (0,) * (a.ndim - 1), (1,) + a.shape[1:])[0]
    return at


def _looped(step, face, mode, lowest, shape):
    ct = np.dtype(np.asarray(lowest).dtype)
    blocks = shape[0]

    def block(geometry, ints, b):
        """Block `b`'s geometry and rows, its window (Y, X) and the sample index of a step."""
        at = _at(b)
        need = at(ints["need"])
        cols = jnp.maximum(need[1], 1)
        return (jax.tree.map(at, geometry), jax.tree.map(at, ints["rows"]), need[0] * need[1],
                lambda k: (lax.div(k, cols), lax.rem(k, cols)))

    def forward(flat, geometry, ints):
        seed = lowest if (mode == "max" and face == "openvino") else np.array(
            -np.inf if mode == "max" else 0, ct)
        zero = jnp.zeros((), ct)

        def run(b, out):
            at = _at(b)
            g, rows, trips, index = block(geometry, ints, b)
            first = tuple(at(a) for a in ints["skipped"])
            per_sample = jnp.maximum(at(ints["count"]), 1)[:, None, None, None]

            def body(k, carry):
                acc, win, pending = carry
                ky, kx = index(k)
                v, mask, iy, ix = step(flat, g, rows, ky, kx)
                m = mask[..., None]
                if mode == "avg":
                    add = v if face == "onnx" else samples.divide(v, per_sample)
                    return jnp.where(m, acc + add, acc), win, pending
                if face == "onnx":
                    take = m & samples.ieee_take(acc, v)
                else:
                    after = (iy > first[1]) | ((iy == first[1]) & (ix > first[2]))
                    fire = (pending & after & mask)[..., None] & (zero > acc)
                    acc = jnp.where(fire, zero, acc)
                    win = jnp.where(fire, -1, win)
                    pending = pending & ~(after & mask)
                    take = m & (v > acc)
                return jnp.where(take, v, acc), jnp.where(take, k, win), pending

            init = (jnp.full(shape[1:], seed, ct),
                    jnp.full(shape[1:], -1, jnp.int32) if mode == "max" else None,
                    first[0] if mode == "max" else None)
            got = lax.fori_loop(0, trips, body, init)
            return jax.tree.map(lambda whole, part: lax.dynamic_update_index_in_dim(
                whole, part, b, 0), out, got)

        out0 = (jnp.zeros(shape, ct), jnp.zeros(shape, jnp.int32) if mode == "max" else None,
                jnp.zeros_like(ints["skipped"][0]) if mode == "max" else None)
        return lax.fori_loop(0, blocks, run, out0)

    @jax.custom_vjp
    def looped(flat, geometry, ints):
        acc, _, pending = forward(flat, geometry, ints)
        return acc, pending

    def fwd(flat, geometry, ints):
        acc, win, pending = forward(flat, geometry, ints)
        return (acc, pending), (flat, geometry, ints, win)

    def bwd(res, cts):  # cts[1] is the bool `pending`'s (float0) cotangent, or None
        flat, geometry, ints, win = res
        ct_acc = cts[0]

        # The blocks in reverse order, each block's samples in order from a zero partial sum
        # added to the total: the order of a loop per block under `lax.map`.
        def run(i, grads):
            b = blocks - 1 - i
            at = _at(b)
            g, rows, trips, index = block(geometry, ints, b)
            ct_b = at(ct_acc)
            if mode == "avg":
                per_sample = jnp.maximum(at(ints["count"]), 1)[:, None, None, None]
                scale = ct_b if face == "onnx" else ct_b / per_sample
            else:
                win_b = at(win)

            def body(k, partial):
                ky, kx = index(k)

                def sample(f, g):
                    v, mask, _, _ = step(f, g, rows, ky, kx)
                    return v, mask

                _, pull, mask = jax.vjp(sample, flat, g, has_aux=True)
                m = mask[..., None]
                if mode == "avg":
                    ct_v = jnp.where(m, scale, jnp.zeros_like(scale))
                else:
                    ct_v = jnp.where(m & (win_b == k), ct_b, jnp.zeros_like(ct_b))
                d_flat, d_g = pull(ct_v)
                return (partial[0] + d_flat, jax.tree.map(jnp.add, partial[1], d_g))

            zeros = (jnp.zeros_like(flat), jax.tree.map(jnp.zeros_like, g))
            d_flat, d_g = lax.fori_loop(0, trips, body, zeros)
            return (grads[0] + d_flat, jax.tree.map(
                lambda whole, part: lax.dynamic_update_index_in_dim(whole, part, b, 0),
                grads[1], d_g))

        zeros = (jnp.zeros_like(flat), jax.tree.map(jnp.zeros_like, geometry))
        d_flat, d_geometry = lax.fori_loop(0, blocks, run, zeros)
        d_ints = jax.tree.map(
            lambda a: (np.zeros(a.shape, jax.dtypes.float0) if not jnp.issubdtype(
                a.dtype, jnp.floating) else jnp.zeros_like(a)), ints)
        return d_flat, d_geometry, d_ints

    looped.defvjp(fwd, bwd)
    return looped
