"""The jax.random calls whose results generate_jax_random.py stores (jax_random.json) and
test_random_known_answers.py compares: each case is a function of the random module (jax.random or
cdnajit.random) and a raw key, run the same way on both, and how its results must agree:

  exact         bit for bit: threefry bits, and what JAX makes of them with integer arithmetic,
                comparisons, sorts, or exact float operations (uniform's mantissa trick, fma).
  eps N         |difference| <= N eps max(1, |JAX's value|): the same formula on the same uniform
                floats, whose elementary functions (log, log1p, tan, erf_inv) are XLA CPU's
                approximations on one side and cdnajit's (correctly rounded but for rare ties) on
                the other; N is XLA's error on the formula (below).
  agree F R     rejection loops: each element's accept/reject decisions compare rounded
                transcendentals, so a decision may flip on a 1-ulp difference and that element then
                follows other draws; at least the fraction F of elements agree to relative R. Also
                formulas chaining several elementary functions (F = 1, R about 100 eps).
  error         JAX raises; the stored answer is the exception's class name.
"""
from __future__ import annotations

import numpy as np

SEEDS = (0, 42, 2 ** 31 + 7)
MEAN = np.array([1.0, -2.0, 0.5])
COV = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 0.5]])
GRID = np.arange(24.0).reshape(4, 6)
P = np.array([0.1, 0.2, 0.3, 0.4])
LOGITS = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]]))
FLOATS = ("float16", "bfloat16", "float32", "float64")


def cases():
    """name -> (check, function of (module, key))."""
    c = {}

    # -- keys --
    for seed in (0, 42, -1, 2 ** 40 + 5, 2 ** 63 - 1, np.int32(-7), np.uint32(3)):
        c[f"PRNGKey({seed!r})"] = ("exact", lambda r, k, s=seed: r.PRNGKey(s))
    c["key_data(key(5))"] = ("exact", lambda r, k: r.key_data(r.key(5)))
    c["key_data(split(key(5), (2, 3)))"] = ("exact", lambda r, k: r.key_data(r.split(r.key(5), (2, 3))))
    c["key_data(fold_in(key(5), 9))"] = ("exact", lambda r, k: r.key_data(r.fold_in(r.key(5), 9)))
    for num in (1, 2, 3, (2, 3), 17):
        c[f"split({num})"] = ("exact", lambda r, k, n=num: r.split(k, n))
    for data in (0, 1, 2 ** 31, 2 ** 32 - 1, np.uint32(12345)):
        c[f"fold_in({data!r})"] = ("exact", lambda r, k, d=data: r.fold_in(k, d))
    c["split(split)[1]"] = ("exact", lambda r, k: r.split(r.split(k)[1], 4))

    # -- bits, uniform, randint, bernoulli --
    for dtype in (None, "uint8", "uint16", "uint32", "uint64"):
        for shape in ((), (1,), (7,), (3, 5), (2, 0, 3), (257,)):
            c[f"bits({shape}, {dtype})"] = ("exact", lambda r, k, s=shape, d=dtype: r.bits(k, s, d))
    for dtype in (None, *FLOATS):
        for shape in ((), (7,), (4, 65)):
            c[f"uniform({shape}, {dtype})"] = ("exact", lambda r, k, s=shape, d=dtype: r.uniform(k, s, d))
    c["uniform(minval=-2, maxval=[1, 2, 3])"] = (
        "exact", lambda r, k: r.uniform(k, (5, 3), minval=-2.0, maxval=np.array([1.0, 2.0, 3.0])))
    c["uniform(f32, 10, 11)"] = ("exact", lambda r, k: r.uniform(k, (100,), "float32", 10.0, 11.0))
    for dtype in (None, "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"):
        c[f"randint(-3, 100, {dtype})"] = ("exact", lambda r, k, d=dtype: r.randint(k, (50,), -3, 100, d))
    c["randint(uint8 0..256)"] = ("exact", lambda r, k: r.randint(k, (60,), 0, 256, "uint8"))
    c["randint(int32 full)"] = ("exact", lambda r, k: r.randint(k, (60,), -2 ** 31, 2 ** 31, "int32"))
    c["randint(int64 wide)"] = ("exact", lambda r, k: r.randint(k, (60,), -2 ** 62, 2 ** 62))
    c["randint(max <= min)"] = ("exact", lambda r, k: r.randint(k, (5,), 5, 3))
    c["randint(array bounds)"] = ("exact", lambda r, k: r.randint(k, (4, 3), np.array([0, 10, 20]), 30))
    c["randint(float bounds)"] = ("exact", lambda r, k: r.randint(k, (9,), 0.5, 7.9))
    for p in (0.3, np.float32(0.7), np.array([0.0, 0.5, 1.0])):
        c[f"bernoulli({p!r})"] = ("exact", lambda r, k, p=p: r.bernoulli(k, p, (40, 3)))
    c["bernoulli(high)"] = ("exact", lambda r, k: r.bernoulli(k, np.float32(0.3), (100,), mode="high"))
    c["bernoulli(shape None)"] = ("exact", lambda r, k: r.bernoulli(k, np.array([0.2, 0.9])))

    # -- permutations and choices (sorts by random keys) --
    c["permutation(10)"] = ("exact", lambda r, k: r.permutation(k, 10))
    c["permutation(1000)"] = ("exact", lambda r, k: r.permutation(k, 1000))
    c["permutation(grid)"] = ("exact", lambda r, k: r.permutation(k, GRID))
    c["permutation(grid, axis=1)"] = ("exact", lambda r, k: r.permutation(k, GRID, axis=1))
    c["permutation(grid, 1, independent)"] = ("exact", lambda r, k: r.permutation(k, GRID, 1, True))
    c["choice(10, (3, 4))"] = ("exact", lambda r, k: r.choice(k, 10, (3, 4)))
    c["choice(grid, (3,), axis=1)"] = ("exact", lambda r, k: r.choice(k, GRID, (3,), axis=1))
    c["choice(10, (5,), replace=False)"] = ("exact", lambda r, k: r.choice(k, 10, (5,), replace=False))
    c["choice(grid, (2,), replace=False)"] = ("exact", lambda r, k: r.choice(k, GRID, (2,), replace=False))
    c["choice(4, p)"] = ("exact", lambda r, k: r.choice(k, 4, (20,), p=P))
    c["choice(4, p, replace=False)"] = ("exact", lambda r, k: r.choice(k, 4, (3,), replace=False, p=P))
    c["choice(0 draws)"] = ("exact", lambda r, k: r.choice(k, 5, (0,)))
    c["categorical"] = ("exact", lambda r, k: r.categorical(k, LOGITS))
    c["categorical(axis=0, shape)"] = ("exact", lambda r, k: r.categorical(k, LOGITS, axis=0, shape=(5, 3)))
    c["categorical(replace=False)"] = ("exact", lambda r, k: r.categorical(k, LOGITS, shape=(3, 2), replace=False))

    # -- transforms of uniform floats --
    # XLA CPU's own error on these formulas bounds the difference: its f64 log and log1p are up to
    # 63 eps from the correctly rounded value, its f64 erf_inv up to ~15, measured against numpy/scipy
    # on the same (exact) uniform floats; cdnajit's are within 2 eps of those references
    # (tests/frontend/test_random.py). The f32 normal computes erf_inv by XLA's own formula (Giles'
    # polynomial in log1p(-x^2)): only log1p's rounding differs, a few eps through the polynomial.
    xla_error = {("normal", "float32"): 4, ("normal", "float64"): 16, ("truncated_normal", "float32"): 8,
                 ("truncated_normal", "float64"): 16, ("exponential", "float32"): 2, ("exponential", "float64"): 64,
                 ("laplace", "float32"): 2, ("laplace", "float64"): 64, ("logistic", "float32"): 2,
                 ("logistic", "float64"): 64, ("gumbel", "float32"): 2, ("gumbel", "float64"): 2,
                 ("cauchy", "float32"): 2, ("cauchy", "float64"): 2}
    for dtype in ("float32", "float64"):
        c[f"normal({dtype})"] = (f"eps {xla_error['normal', dtype]}", lambda r, k, d=dtype: r.normal(k, (1001,), d))
        c[f"truncated_normal({dtype})"] = (f"eps {xla_error['truncated_normal', dtype]}",
                                           lambda r, k, d=dtype: r.truncated_normal(k, -1.0, 2.0, (300,), d))
        for name in ("exponential", "laplace", "logistic", "gumbel", "cauchy"):
            c[f"{name}({dtype})"] = (f"eps {xla_error[name, dtype]}",
                                     lambda r, k, d=dtype, n=name: getattr(r, n)(k, (500,), d))
    c["normal(float16)"] = ("eps 1", lambda r, k: r.normal(k, (100,), "float16"))
    c["normal(complex64)"] = ("eps 4", lambda r, k: r.normal(k, (50,), "complex64"))
    c["normal(default)"] = ("eps 16", lambda r, k: r.normal(k, (3, 4)))
    c["multivariate_normal"] = ("eps 16", lambda r, k: r.multivariate_normal(k, MEAN, COV, (40,)))
    c["orthogonal(5, (3,))"] = ("agree 1.0 1e-9", lambda r, k: r.orthogonal(k, 5, (3,)))
    c["orthogonal(3, m=5)"] = ("agree 1.0 1e-9", lambda r, k: r.orthogonal(k, 3, (2,), m=5))

    # -- rejection loops --
    for alpha in (0.3, 1.0, 4.0):
        for dtype in ("float32", "float64"):
            c[f"gamma({alpha}, {dtype})"] = ("agree 0.95 1e-4", lambda r, k, a=alpha, d=dtype: r.gamma(k, a, (400,), d))
    c["gamma(array)"] = ("agree 0.95 1e-9", lambda r, k: r.gamma(k, np.array([0.5, 1.0, 3.0]), (40, 3)))
    c["gamma(bad alpha)"] = ("agree 1.0 0", lambda r, k: r.gamma(k, np.array([-1.0, np.nan]), (2,)))
    c["loggamma(0.1)"] = ("agree 0.95 1e-9", lambda r, k: r.loggamma(k, 0.1, (300,)))
    c["beta(0.5, 2)"] = ("agree 0.9 1e-9", lambda r, k: r.beta(k, 0.5, 2.0, (300,)))
    c["dirichlet([1, 2, 3])"] = ("agree 0.8 1e-9", lambda r, k: r.dirichlet(k, np.array([1.0, 2.0, 3.0]), (100,)))
    c["t(3)"] = ("agree 0.9 1e-9", lambda r, k: r.t(k, 3.0, (300,)))
    for lam in (0.0, 0.5, 4.0, 25.0, 1000.0):
        c[f"poisson({lam})"] = ("agree 0.99 0", lambda r, k, lam=lam: r.poisson(k, lam, (300,)))
    c["poisson(bad lam)"] = ("agree 1.0 0", lambda r, k: r.poisson(k, np.array([-1.0, np.nan, 15.0]), (2, 3)))
    c["generalized_normal(1.5)"] = ("agree 0.9 1e-9", lambda r, k: r.generalized_normal(k, 1.5, (300,)))
    c["ball(3)"] = ("agree 0.8 1e-9", lambda r, k: r.ball(k, 3, shape=(100,)))

    # -- binomial (inversion for n q <= 10, BTRS above) and multinomial (a chain of binomials) --
    for n, p in ((5, 0.3), (20, 0.9), (100, 0.4), (1000, 0.02), (10 ** 6, 0.7)):
        for dtype in ("float32", "float64"):
            c[f"binomial({n}, {p}, {dtype})"] = ("agree 0.99 0", lambda r, k, n=n, p=p, d=dtype:
                                                  r.binomial(k, n, np.asarray(p, d), (300,), d))
    c["binomial(arrays)"] = ("agree 0.99 0", lambda r, k: r.binomial(k, np.array([[3.0], [50.0]]), P, (2, 4)))
    c["binomial(shape None)"] = ("agree 0.99 0", lambda r, k: r.binomial(k, 30, np.array([0.2, 0.5, 0.8])))
    c["binomial(float n)"] = ("agree 0.99 0", lambda r, k: r.binomial(k, 7.9, 0.5, (50,)))
    c["binomial(bad n, p)"] = ("agree 1.0 0", lambda r, k: r.binomial(
        k, np.array([-1.0, np.nan, np.inf, 10.0, 10.0, 10.0, 0.0]), np.array([0.5, 0.5, 0.5, np.nan, -0.5, 1.5, 0.5])))
    c["binomial(p 0 and 1)"] = ("exact", lambda r, k: r.binomial(k, 40, np.array([0.0, 1.0]), (30, 2)))
    c["multinomial(10, P)"] = ("agree 0.95 0", lambda r, k: r.multinomial(k, 10, P))
    c["multinomial(batch)"] = ("agree 0.95 0", lambda r, k: r.multinomial(k, np.array([5.0, 200.0, 1e4]),
                                                                          np.array([0.5, 0.25, 0.25]), shape=(3, 3)))
    c["multinomial(f32, shape)"] = ("agree 0.95 0", lambda r, k: r.multinomial(
        k, 50, P.astype("float32"), shape=(20, 4), dtype="float32"))
    c["multinomial(zero p)"] = ("agree 0.95 0", lambda r, k: r.multinomial(k, 30, np.array([0.0, 0.6, 0.0, 0.4])))

    # -- the rest of jax.random: formulas chaining several elementary functions (or gamma loops) --
    c["rademacher"] = ("exact", lambda r, k: r.rademacher(k, (50,)))
    c["geometric(0.3)"] = ("exact", lambda r, k: r.geometric(k, 0.3, (200,)))
    c["triangular(f32)"] = ("exact", lambda r, k: r.triangular(k, -1.0, 0.5, 2.0, (200,), "float32"))
    for name, args in (("lognormal", (0.5,)), ("pareto", (2.0,)), ("rayleigh", (2.0,)), ("weibull_min", (2.0, 1.5))):
        for dtype, rtol in (("float32", "1e-5"), ("float64", "1e-12")):
            c[f"{name}({dtype})"] = (f"agree 1.0 {rtol}", lambda r, k, n=name, a=args, d=dtype:
                                     getattr(r, n)(k, *a, (200,), d))
    c["maxwell"] = ("agree 1.0 1e-12", lambda r, k: r.maxwell(k, (200,)))
    c["wald(1.5)"] = ("agree 1.0 1e-12", lambda r, k: r.wald(k, 1.5, (200,)))
    c["double_sided_maxwell"] = ("agree 1.0 1e-12", lambda r, k: r.double_sided_maxwell(k, 1.0, 2.0, (100,)))
    c["chisquare(3)"] = ("agree 0.95 1e-9", lambda r, k: r.chisquare(k, 3.0, (200,)))
    c["f(3, 5)"] = ("agree 0.9 1e-9", lambda r, k: r.f(k, 3.0, 5.0, (200,)))

    # -- bad input: JAX's error class --
    c["split(key of shape (3,))"] = ("error", lambda r, k: r.split(np.zeros(3, np.uint32)))
    c["split(int32 key)"] = ("error", lambda r, k: r.split(np.zeros(2, np.int32)))
    c["uniform(batched key)"] = ("error", lambda r, k: r.uniform(np.zeros((2, 2), np.uint32), (3,)))
    c["uniform(int dtype)"] = ("error", lambda r, k: r.uniform(k, (3,), "int32"))
    c["bits(int dtype)"] = ("error", lambda r, k: r.bits(k, (3,), "int32"))
    c["randint(float dtype)"] = ("error", lambda r, k: r.randint(k, (3,), 0, 5, "float32"))
    c["choice(replace=False, too many)"] = ("error", lambda r, k: r.choice(k, 3, (5,), replace=False))
    c["choice(0 inputs)"] = ("error", lambda r, k: r.choice(k, 0, (2,)))
    c["choice(bad p)"] = ("error", lambda r, k: r.choice(k, 4, (2,), p=np.ones(3) / 3))
    c["choice(shape int)"] = ("error", lambda r, k: r.choice(k, 4, 2))
    c["PRNGKey(array seed)"] = ("error", lambda r, k: r.PRNGKey(np.zeros(2, np.int64)))
    c["PRNGKey(float seed)"] = ("error", lambda r, k: r.PRNGKey(1.5))
    c["fold_in(array)"] = ("error", lambda r, k: r.fold_in(k, np.arange(2)))
    c["uniform(shape mismatch)"] = ("error", lambda r, k: r.uniform(k, (3,), minval=np.zeros(4)) + 0)
    c["randint(shape mismatch)"] = ("error", lambda r, k: r.randint(k, (3,), np.zeros(4, int), 5))
    c["categorical(too many)"] = ("error", lambda r, k: r.categorical(k, LOGITS, shape=(4, 2), replace=False))
    c["dirichlet(scalar alpha)"] = ("error", lambda r, k: r.dirichlet(k, 1.0))
    c["multivariate_normal(bad cov)"] = ("error", lambda r, k: r.multivariate_normal(k, MEAN, np.eye(2)))
    c["bernoulli(int p)"] = ("error", lambda r, k: r.bernoulli(k, np.array([1, 0])))
    c["gumbel(bad mode)"] = ("error", lambda r, k: r.gumbel(k, (2,), mode="middle"))
    c["binomial(int dtype)"] = ("error", lambda r, k: r.binomial(k, 5, 0.5, (3,), "int32"))
    c["binomial(shape mismatch)"] = ("error", lambda r, k: r.binomial(k, 5, np.full(4, 0.5), (3,)))
    c["multinomial(shape mismatch)"] = ("error", lambda r, k: r.multinomial(k, 5, P, shape=(3,)))
    c["multinomial(n shape)"] = ("error", lambda r, k: r.multinomial(k, np.array([1.0, 2.0]), P))
    return c
