"""cdnajit.random: jax.random's API, bit for bit with JAX's default threefry2x32 keys
(`jax_threefry_partitionable` on), built from graph-IR uint32 ops that fuse into the kernels."""
from .continuous import (bernoulli, cauchy, exponential, gumbel, laplace, logistic, normal, truncated_normal,
                         uniform)
from .keys import PRNGKey, PRNGKeyArray, fold_in, key, key_data, key_impl, split, wrap_key_data
from .discrete import bits, categorical, choice, permutation, randint
from .gamma import ball, beta, dirichlet, gamma, generalized_normal, loggamma, poisson, t
from . import rocrand
from .binomial import binomial, multinomial
from .matrices import multivariate_normal, orthogonal
from .derived import (chisquare, clone, double_sided_maxwell, f, geometric, lognormal, maxwell, pareto, rademacher,
                   rayleigh, triangular, wald, weibull_min)
