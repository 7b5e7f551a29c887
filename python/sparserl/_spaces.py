"""The spaces the environment declares, for when Gymnasium is not installed: Discrete, Box,
MultiBinary, MultiDiscrete and Dict with Gymnasium's names, attributes (n, shape, dtype, low, high,
spaces) and methods (contains / `in`, sample, seed), so that code written against gymnasium.spaces
runs unchanged on what it uses of them. With Gymnasium installed the environment uses
gymnasium.spaces itself."""

import numpy as np


class Space:
    def __init__(self, shape, dtype, seed=None):
        self.shape = shape
        self.dtype = None if dtype is None else np.dtype(dtype)
        self.np_random = np.random.default_rng(seed)

    def seed(self, seed=None):
        self.np_random = np.random.default_rng(seed)
        return [seed]

    def __contains__(self, x):
        return self.contains(x)


class Discrete(Space):
    def __init__(self, n, seed=None):
        super().__init__((), np.int64, seed)
        self.n = int(n)

    def contains(self, x):
        if isinstance(x, (bool, np.bool_)):
            return False
        if isinstance(x, (int, np.integer)) or (isinstance(x, np.ndarray) and x.shape == ()
                                                and np.issubdtype(x.dtype, np.integer)):
            return 0 <= int(x) < self.n
        return False

    def sample(self, mask=None):
        if mask is not None:
            allowed = np.flatnonzero(np.asarray(mask))
            return int(self.np_random.choice(allowed)) if allowed.size else 0
        return int(self.np_random.integers(self.n))

    def __repr__(self):
        return f"Discrete({self.n})"


class Box(Space):
    def __init__(self, low, high, shape, dtype, seed=None):
        super().__init__(tuple(shape), dtype, seed)
        self.low = np.full(self.shape, low, dtype=self.dtype)
        self.high = np.full(self.shape, high, dtype=self.dtype)

    def contains(self, x):
        if not isinstance(x, np.ndarray):
            return False
        return bool(x.shape == self.shape and np.can_cast(x.dtype, self.dtype)
                    and np.all(x >= self.low) and np.all(x <= self.high))

    def sample(self):
        if np.issubdtype(self.dtype, np.integer):
            return self.np_random.integers(self.low, self.high, endpoint=True).astype(self.dtype)
        low = np.where(np.isfinite(self.low), self.low, -1.0)
        high = np.where(np.isfinite(self.high), self.high, 1.0)
        return self.np_random.uniform(low, high).astype(self.dtype)

    def __repr__(self):
        return f"Box({self.shape}, {self.dtype})"


class MultiBinary(Space):
    def __init__(self, n, seed=None):
        super().__init__((n,) if np.isscalar(n) else tuple(n), np.int8, seed)
        self.n = n

    def contains(self, x):
        return bool(isinstance(x, np.ndarray) and x.shape == self.shape
                    and np.all((x == 0) | (x == 1)))

    def sample(self):
        return self.np_random.integers(0, 2, self.shape).astype(np.int8)

    def __repr__(self):
        return f"MultiBinary({self.n})"


class MultiDiscrete(Space):
    def __init__(self, nvec, seed=None):
        self.nvec = np.asarray(nvec, dtype=np.int64)
        super().__init__(self.nvec.shape, np.int64, seed)

    def contains(self, x):
        x = np.asarray(x)
        return bool(x.shape == self.shape and np.issubdtype(x.dtype, np.integer)
                    and np.all(x >= 0) and np.all(x < self.nvec))

    def sample(self):
        return self.np_random.integers(0, self.nvec).astype(np.int64)

    def __repr__(self):
        return f"MultiDiscrete({self.nvec})"


class Dict(Space):
    def __init__(self, spaces, seed=None):
        super().__init__(None, None, seed)
        self.spaces = dict(spaces)

    def contains(self, x):
        return (isinstance(x, dict) and x.keys() == self.spaces.keys()
                and all(x[k] in space for k, space in self.spaces.items()))

    def sample(self):
        return {k: space.sample() for k, space in self.spaces.items()}

    def seed(self, seed=None):
        for i, space in enumerate(self.spaces.values()):
            space.seed(None if seed is None else seed + i)
        return [seed]

    def __getitem__(self, key):
        return self.spaces[key]

    def keys(self):
        return self.spaces.keys()

    def __repr__(self):
        return "Dict(" + ", ".join(f"{k!r}: {v}" for k, v in self.spaces.items()) + ")"


def batch_space(space, n):
    """The space of n stacked samples of `space` (Gymnasium's gymnasium.vector.utils.batch_space)."""
    if isinstance(space, Dict):
        return Dict({k: batch_space(s, n) for k, s in space.spaces.items()})
    if isinstance(space, Discrete):
        return MultiDiscrete(np.full(n, space.n))
    if isinstance(space, MultiBinary):
        return MultiBinary((n, *space.shape))
    if isinstance(space, Box):
        return Box(space.low[None].repeat(n, 0), space.high[None].repeat(n, 0), (n, *space.shape),
                   space.dtype)
    raise TypeError(f"cannot batch {space!r}")
