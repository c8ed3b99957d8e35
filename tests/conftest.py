"""Test session set-up.

Eight simulated CPU devices are configured before JAX initialises its backend, so that the
sharding tests can lay arrays over a mesh; every other test runs on device 0 as usual.
"""

import jax

jax.config.update("jax_num_cpu_devices", 8)
