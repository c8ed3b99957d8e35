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
    """The loop over the window's samples: (R, P_h, P_w, C) of CT, before the final division.

    `step(flat, geometry, ints, ky, kx)` gives ``(v, mask, iy, ix)`` of one sample of every bin;
    `geometry` are the differentiable ROI quantities, `ints` the rest (grids, window starts,
    trip counts, image offsets, sample counts, the skipped samples).
    """
    return _looped(step, face, mode, lowest, shape)(flat, geometry, ints)


def _looped(step, face, mode, lowest, shape):
    ct = np.dtype(np.asarray(lowest).dtype)

    def forward(flat, geometry, ints):
        need_y, need_x, count = ints["need_y"], ints["need_x"], ints["count"]
        cols = jnp.maximum(need_x, 1)
        seed = lowest if (mode == "max" and face == "openvino") else np.array(
            -np.inf if mode == "max" else 0, ct)
        zero = jnp.zeros((), ct)
        per_sample = jnp.maximum(count, 1)[:, None, None, None]
        first = ints["skipped"]

        def body(k, carry):
            acc, win, pending = carry
            ky, kx = k // cols, k % cols
            v, mask, iy, ix = step(flat, geometry, ints, ky, kx)
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

        init = (jnp.full(shape, seed, ct), jnp.full(shape, -1, jnp.int32), first[0])
        return lax.fori_loop(0, need_y * need_x, body, init)

    @jax.custom_vjp
    def looped(flat, geometry, ints):
        acc, _, pending = forward(flat, geometry, ints)
        return acc, pending

    def fwd(flat, geometry, ints):
        acc, win, pending = forward(flat, geometry, ints)
        return (acc, pending), (flat, geometry, ints, win)

    def bwd(res, cts):  # cts[1] is the bool `pending`'s (float0) cotangent
        flat, geometry, ints, win = res
        ct_acc = cts[0]
        cols = jnp.maximum(ints["need_x"], 1)
        per_sample = jnp.maximum(ints["count"], 1)[:, None, None, None]

        def body(k, grads):
            ky, kx = k // cols, k % cols
            def sample(f, g):
                v, mask, _, _ = step(f, g, ints, ky, kx)
                return v, mask

            _, pull, mask = jax.vjp(sample, flat, geometry, has_aux=True)
            m = mask[..., None]
            if mode == "avg":
                scale = ct_acc if face == "onnx" else ct_acc / per_sample
                ct_v = jnp.where(m, scale, jnp.zeros_like(scale))
            else:
                ct_v = jnp.where(m & (win == k), ct_acc, jnp.zeros_like(ct_acc))
            d_flat, d_geometry = pull(ct_v)
            return (grads[0] + d_flat, jax.tree.map(jnp.add, grads[1], d_geometry))

        zeros = (jnp.zeros_like(flat), jax.tree.map(jnp.zeros_like, geometry))
        d_flat, d_geometry = lax.fori_loop(0, ints["need_y"] * ints["need_x"], body, zeros)
        d_ints = jax.tree.map(
            lambda a: (np.zeros(a.shape, jax.dtypes.float0) if not jnp.issubdtype(
                a.dtype, jnp.floating) else jnp.zeros_like(a)), ints)
        return d_flat, d_geometry, d_ints

    looped.defvjp(fwd, bwd)
    return looped
