"""Every JAX internal jaxmax uses sits behind one probe with a public fallback.

Three internals, each read in one module and decided once per process by that module's
`available()`:

* JAX's private scatter primitive with a combiner of our own (`lowering/scatter/private.py`),
  for SegmentMax's rule and the bit-reading max scatters;
* a tracer's recorded producer (`lowering/scatter/built.py`), to recognise an index broadcast
  in the same trace;
* JAX's trace context and cache registry (`lowering/jax_caches.py`), for the fast programs of
  small eager calls compiled ahead of time (`compile_options.jit`).

Here: no other module reaches into JAX's internals (read from the source with `ast`), each
probe says yes on the installed JAX and no when its internal fails or computes something else.
The fallbacks themselves run against the oracles under `helpers.public_forms()` in
test_scatter_combiner.py, test_segment_max_data_shapes.py and test_scatter_layouts.py (and
below, for SegmentMax's sharp cases).
"""

from __future__ import annotations

import ast
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import roi_oracle
from helpers import assert_same, public_forms
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P
from segment_oracle import segment_max

from jaxmax import onnx
from jaxmax import openvino as jov
from jaxmax._src import linear_calls
from jaxmax._src.lowering import compile_options, jax_caches
from jaxmax._src.lowering.scatter import built, private

PACKAGE = Path(__file__).resolve().parent.parent / "jaxmax"
#: the module allowed to import from JAX's internals (`jax._src`)
PRIVATE_IMPORTS = {"_src/lowering/scatter/private.py", "_src/lowering/jax_caches.py",
                   "_src/linear_calls.py"}
#: the module allowed to read a tracer's recorded producer
TRACE_RECORD = {"_src/lowering/scatter/built.py"}
_RECORD_FIELDS = {"parent", "in_tracers"}


def _sources():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(encoding="utf-8"))


def test_jax_internals_are_read_in_their_probed_modules_only():
    private_imports, record_reads = set(), set()
    for name, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("jax._src"):
                private_imports.add(name)
            if isinstance(node, ast.Import) and any(a.name.startswith("jax._src")
                                                    for a in node.names):
                private_imports.add(name)
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                    and not node.attr.startswith("__") and isinstance(node.value, ast.Name)
                    and node.value.id in ("jax", "lax", "jnp")):
                private_imports.add(name)  # jax._private, lax._private, ... (not __version__)
            if isinstance(node, ast.Attribute) and node.attr in _RECORD_FIELDS:
                record_reads.add(name)
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr"
                    and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
                    and node.args[1].value in _RECORD_FIELDS):
                record_reads.add(name)
    assert private_imports == PRIVATE_IMPORTS
    assert record_reads == TRACE_RECORD


def test_the_probes_say_yes_on_this_jax():
    # the installed JAX (CI runs the oldest and the newest) must take the faster forms
    assert private._works() and private.available()
    assert built._works() and built.available()
    assert jax_caches._works() and jax_caches.available()
    assert linear_calls._works() and linear_calls.available()


@pytest.fixture
def fresh_probes():
    probes = (private._works, built._works, jax_caches._works, linear_calls._works)
    for probe in probes:
        probe.cache_clear()
    yield
    for probe in probes:
        probe.cache_clear()
    jax.clear_caches()


def _ieee_max_scatter(combine, operand, index, values, numbers):
    # what a primitive that ignored the combiner would compute: NaN updates win
    return jax.lax.scatter_max(operand, index, values, numbers,
                               mode=jax.lax.GatherScatterMode.FILL_OR_DROP)


def _broken(*args, **kwargs):
    raise TypeError("an internal that moved")


@pytest.mark.parametrize("bind", [_ieee_max_scatter, _broken], ids=["other result", "raises"])
def test_the_scatter_probe_says_no_when_the_internal_misbehaves(fresh_probes, monkeypatch, bind):
    monkeypatch.setattr(private, "bind", bind)
    assert not private.available()


def test_the_scatter_probe_says_no_without_the_internals(fresh_probes, monkeypatch):
    monkeypatch.setattr(private, "_PRIVATE", False)
    assert not private.available()


def _always_constant(x, axis, depth):
    return True


def _no_record(x, axis, depth):
    raise AttributeError("parent")


@pytest.mark.parametrize("read", [_always_constant, _no_record], ids=["other answer", "absent"])
def test_the_record_probe_says_no_when_the_record_differs(fresh_probes, monkeypatch, read):
    monkeypatch.setattr(built, "_known_constant", read)
    assert not built.available()


def test_the_caches_probe_says_no_when_the_context_does_not_change(fresh_probes, monkeypatch):
    monkeypatch.setattr(jax_caches, "trace_key", lambda: ())
    assert not jax_caches.available()


def test_the_caches_probe_says_no_without_the_internals(fresh_probes, monkeypatch):
    monkeypatch.setattr(jax_caches, "_PRIVATE", False)
    assert not jax_caches.available()


def test_the_caches_probe_says_no_when_registering_fails(fresh_probes, monkeypatch):
    monkeypatch.setattr(jax_caches, "register", _broken)
    assert not jax_caches.available()


def test_small_eager_calls_without_the_caches_internals(fresh_probes, monkeypatch):
    """The fallback keeps the fast programs in ``jax.jit`` caches, compiles nothing ahead of
    time, and a small eager call of an operator still gives the contract's values (the NumPy
    oracle of tests/roi_oracle.py; NaN and a ROI partly outside the map)."""
    monkeypatch.setattr(jax_caches, "_PRIVATE", False)
    x = np.random.default_rng(5).standard_normal((1, 2, 7, 13)).astype(np.float32)
    x[0, 1, 2, 4] = np.nan
    rois = np.array([[0, 0.5, 1.0, 9.0, 5.5], [0, -2.0, 0.0, 20.0, 3.0]], np.float32)
    entry = compile_options.jit(lambda v: v * 2)
    assert_same(np.asarray(entry(x)), x * 2)
    assert entry.programs.by_key == {} and entry.fast
    got = np.asarray(onnx.max_roi_pool(x, rois, pooled_shape=(2, 3)))
    assert_same(got, roi_oracle.max_roi_pool(x, rois, 1.0, (2, 3)))


def test_the_probes_run_inside_a_trace(fresh_probes):
    # a caller asks while tracing: the probes compute concretely there too
    seen = []

    def traced(x):
        seen.append((private.available(), built.available(), linear_calls.available()))
        return x

    jax.jit(traced)(jnp.zeros(2))
    assert seen == [(True, True, True)]


@pytest.mark.parametrize("probe", ["private", "built", "jax_caches", "linear_calls"])
def test_the_probes_run_inside_shard_map(fresh_probes, probe):
    """Asked first inside an eager gradient of a ``shard_map`` on an ``Explicit`` mesh (under
    ``set_mesh``): the probe's program compiled in that context failed (its axes manual), and
    the answer, cached for the process, was no, for every later call too (MaxUnpool's sharded
    tangent of ``-0.0`` then read ``+0.0``). Each probe runs where no trace or mesh applies."""
    module = {"private": private, "built": built, "jax_caches": jax_caches,
              "linear_calls": linear_calls}[probe]
    mesh = jax.make_mesh((2,), ("d",), axis_types=(AxisType.Explicit,),
                         devices=jax.devices()[:2])
    seen = []

    def block(v):
        seen.append(module.available())
        return v * v

    x = jax.device_put(np.arange(4, dtype=np.float32), NamedSharding(mesh, P("d")))
    with jax.set_mesh(mesh):
        jax.grad(lambda v: jax.shard_map(block, mesh=mesh, in_specs=P("d"),
                                         out_specs=P("d"))(v).sum())(x)
    assert seen == [True] and module.available()


def _not_transposed(fun, transpose, residuals, linear):
    # a linear call that ignored its transpose: JAX's own transpose of the function runs
    return fun(residuals, linear)


@pytest.mark.parametrize("call", [_not_transposed, _broken], ids=["other result", "raises"])
def test_the_linear_call_probe_says_no_when_the_internal_misbehaves(fresh_probes, monkeypatch,
                                                                   call):
    monkeypatch.setattr(linear_calls, "call", call)
    assert not linear_calls.available()


def test_the_linear_call_probe_says_no_without_the_internals(fresh_probes, monkeypatch):
    monkeypatch.setattr(linear_calls, "_PRIVATE", False)
    assert not linear_calls.available()


def test_auto_axes_derivatives_without_the_linear_call():
    # the fallback (the plain derivative, laid out by XLA's partitioner) on an Auto mesh: the
    # one-device gradient of AdaptiveMaxPool bit for bit (its NaN first element and zeros of
    # both signs in the data), and its tangent up to the sign of a zero (the partitioner adds
    # the devices' parts: -0.0 + 0.0 = +0.0)
    mesh = jax.make_mesh((4,), ("d",), axis_types=(AxisType.Auto,), devices=jax.devices()[:4])
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 3, 16, 12)).astype(np.float32)
    x[0, 0, 0, 0], x[1, 1, 4:8, 2:6] = np.nan, -0.0
    weights = rng.standard_normal((2, 3, 5, 3)).astype(np.float32)
    t = np.where(rng.random(x.shape) < 0.3, np.float32(-0.0), x)

    def loss(v):
        return (jov.adaptive_max_pool(v, [5, 3])[0] * weights).sum()

    def tangent(v, u):
        return jax.jvp(lambda w: jov.adaptive_max_pool(w, [5, 3])[0], (v,), (u,))[1]

    want = (jax.grad(loss)(x), tangent(x, t))
    xs, ts = (jax.device_put(a, NamedSharding(mesh, P(None, None, "d"))) for a in (x, t))
    with public_forms():
        got = (jax.jit(jax.grad(loss))(xs), jax.jit(tangent)(xs, ts))
    np.testing.assert_array_equal(np.asarray(got[0]).view(np.int32),
                                  np.asarray(want[0]).view(np.int32))
    np.testing.assert_array_equal(got[1], want[1])


def test_segment_max_fallback_on_sharp_values():
    # SegmentMax's public form (the masked scatter-max) against the loop oracle on NaN, -inf,
    # signed zeros, lowest(T) and empty segments; helpers.public_forms fails if the private
    # scatter is reached
    lowest = np.finfo(np.float32).min
    data = np.array([[np.nan, -0.0], [np.nan, 0.0], [-np.inf, 0.0], [lowest, -0.0],
                     [3.0, np.nan], [-np.inf, -np.inf]], np.float32)
    ids = np.array([0, 0, 1, 1, 3, 3], np.int32)
    with public_forms():
        for fill in ("ZERO", "LOWEST"):
            got = jov.segment_max(data, ids, 5, fill_mode=fill)
            want = segment_max(data, ids, 5, fill)
            assert_same(got, want, fill)
            # every zero here is +0.0: +0.0 beats -0.0 in either order, and the ZERO fill is +0
            zeros = want == 0
            assert zeros.sum() == (6 if fill == "ZERO" else 2)
            assert not np.signbit(np.asarray(got)[zeros]).any(), fill
