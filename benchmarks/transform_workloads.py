"""W18: the transformations (grad, vmap, hessian) as JAX users run them, side by side with JAX.

Each program takes the array namespace `xp` and the transformation namespace `api` (cdnajit or jax)
and is jitted whole by its peer. Their results are checked against the same program run by
cdnajit's reference interpreter (the numpy peer, where there is one, computes the derivative by
hand: per-example gradients and the Rosenbrock hessian have closed forms).
"""
from __future__ import annotations

import numpy as np

import cdnajit as cj
import cdnajit.numpy as cnp
from workloads import Case, Context, Workload, normal, rng

LEARNING_RATE = 0.01


def mlp_logits(xp, params, x, checkpoint=None):
    """The W5 MLP; with `checkpoint` (api.checkpoint) each hidden layer is recomputed in the backward pass."""
    (w1, b1), (w2, b2), (w3, b3) = params
    hidden = lambda h, w, b: xp.maximum(h @ w + b, 0.0)
    hidden = checkpoint(hidden) if checkpoint else hidden
    return hidden(hidden(x, w1, b1), w2, b2) @ w3 + b3


def cross_entropy(xp, params, x, labels, checkpoint=None):
    """Mean softmax cross-entropy of the W5 MLP's logits against one-hot labels."""
    logits = mlp_logits(xp, params, x, checkpoint)
    shifted = logits - xp.max(logits, axis=-1, keepdims=True)
    log_probabilities = shifted - xp.log(xp.sum(xp.exp(shifted), axis=-1, keepdims=True))
    return -xp.mean(xp.sum(labels * log_probabilities, axis=-1))


def training_step(xp, api, x, labels, w1, b1, w2, b2, w3, b3, remat=False):
    """value_and_grad of the loss and an SGD update; the loss and the new parameters as one vector."""
    params = ((w1, b1), (w2, b2), (w3, b3))
    checkpoint = api.checkpoint if remat else None
    loss, grads = api.value_and_grad(lambda p: cross_entropy(xp, p, x, labels, checkpoint))(params)
    new = api.tree_util.tree_map(lambda p, g: p - LEARNING_RATE * g, params, grads)
    return xp.concatenate([xp.reshape(loss, (1,))] + [xp.ravel(p) for p in api.tree_util.tree_leaves(new)])


def cnn_logits(xp, lax, params, x):
    """Two 3x3 convolutions (same padding), each with relu and 2x2 max pooling, then a dense layer."""
    (k1, c1), (k2, c2), (w, b) = params
    for kernel, bias in ((k1, c1), (k2, c2)):
        x = lax.conv_general_dilated(x, kernel, (1, 1), [(1, 1), (1, 1)], dimension_numbers=("NHWC", "HWIO", "NHWC"))
        x = xp.maximum(x + bias, 0.0)
        x = lax.reduce_window(x, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    return xp.reshape(x, (x.shape[0], -1)) @ w + b


def cnn_training_step(xp, api, x, labels, k1, c1, k2, c2, w, b):
    params = ((k1, c1), (k2, c2), (w, b))

    def loss(p):
        logits = cnn_logits(xp, api.lax, p, x)
        shifted = logits - xp.max(logits, axis=-1, keepdims=True)
        return -xp.mean(xp.sum(labels * (shifted - xp.log(xp.sum(xp.exp(shifted), axis=-1, keepdims=True))), axis=-1))
    value, grads = api.value_and_grad(loss)(params)
    new = api.tree_util.tree_map(lambda p, g: p - LEARNING_RATE * g, params, grads)
    return xp.concatenate([xp.reshape(value, (1,))] + [xp.ravel(p) for p in api.tree_util.tree_leaves(new)])


def logistic_loss(xp, w, x, y):
    return xp.log1p(xp.exp(-y * xp.dot(x, w)))


def per_example_grads(xp, api, w, x, y):
    return api.vmap(api.grad(lambda w, x, y: logistic_loss(xp, w, x, y)), in_axes=(None, 0, 0))(w, x, y)


def per_example_grads_numpy(w, x, y):
    """d/dw log(1 + exp(-y x.w)) = -y x / (1 + exp(y x.w))."""
    return (-y / (1 + np.exp(y * (x @ w))))[:, None] * x


def rosenbrock(xp, x):
    return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_hessian(xp, api, x):
    return api.hessian(lambda x: rosenbrock(xp, x))(x)


def rosenbrock_hessian_numpy(x):
    """The tridiagonal hessian in closed form."""
    n = x.size
    h = np.zeros((n, n), x.dtype)
    i = np.arange(n - 1)
    h[i, i] += 1200 * x[:-1] ** 2 - 400 * x[1:] + 2
    h[i + 1, i + 1] += 200
    h[i, i + 1] = h[i + 1, i] = -400 * x[:-1]
    return h


def peers(program, ctx: Context):
    """cdnajit's and JAX's jitted program, and cdnajit's interpreted one (the reference)."""
    bound = lambda xp, api: (lambda *arrays: program(xp, api, *arrays))
    jax_fn = ctx.jax.jit(bound(ctx.jax.numpy, ctx.jax)) if ctx.jax else None
    return cj.jit(bound(cnp, cj)), jax_fn, cj.jit(bound(cnp, cj), backend="interpret")


def remat_training_step(xp, api, *arrays):
    return training_step(xp, api, *arrays, remat=True)


def build_training_step(ctx: Context, program=training_step) -> Case:
    batch, width = (32, 256) if ctx.quick else (256, 1024)
    generator = rng(60)
    widths = (width, width, width, 10)
    params = []
    for fan_in, fan_out in zip(widths, widths[1:]):
        params += [normal(generator, (fan_in, fan_out), scale=fan_in**-0.5), normal(generator, (fan_out,), scale=0.1)]
    x = normal(generator, (batch, width))
    labels = np.eye(10, dtype=np.float32)[generator.integers(0, 10, batch)]
    compiled, jax_fn, interpreted = peers(program, ctx)
    # Forward: 3 GEMMs; backward: 2 per layer but the first's input gradient (5); checkpointed, the
    # two hidden layers' GEMMs again (counted as work done).
    products = [i * o for i, o in zip(widths, widths[1:])]
    flops = 2 * batch * (sum(products) * 8 // 3 + (sum(products[:2]) if program is remat_training_step else 0))
    # f32 GEMMs with K <= 1024 of O(1) values in either summation order: ~1e-5 relative on the
    # gradients, times the learning rate on the update; the loss is an O(1) mean of them.
    return Case((x, labels, *params), compiled, None, jax_fn, tolerance=(1e-4, 1e-6), reference=interpreted,
                flops=flops)


def build_cnn_training_step(ctx: Context) -> Case:
    batch = 8 if ctx.quick else 32
    generator = rng(62)
    x = normal(generator, (batch, 28, 28, 1))
    labels = np.eye(10, dtype=np.float32)[generator.integers(0, 10, batch)]
    params = [normal(generator, (3, 3, 1, 8), scale=1 / 3), normal(generator, (8,), scale=0.1),
              normal(generator, (3, 3, 8, 16), scale=(72 ** -0.5)), normal(generator, (16,), scale=0.1),
              normal(generator, (7 * 7 * 16, 10), scale=784 ** -0.5), normal(generator, (10,), scale=0.1)]
    compiled, jax_fn, interpreted = peers(cnn_training_step, ctx)
    # f32 convolutions (K <= 72) and a dense layer (K = 784) in either summation order, max pooling
    # exact: ~1e-5 relative on the gradients, times the learning rate on the update.
    return Case((x, labels, *params), compiled, None, jax_fn, tolerance=(1e-4, 1e-6), reference=interpreted)


def build_per_example_grads(ctx: Context) -> Case:
    examples, features = (256, 64) if ctx.quick else (4096, 512)
    generator = rng(61)
    w = normal(generator, (features,), scale=features**-0.5)
    x = normal(generator, (examples, features))
    y = np.sign(normal(generator, (examples,))).astype(np.float32)
    compiled, jax_fn, _ = peers(per_example_grads, ctx)
    # A dot of 512 f32 products (~512 u relative to sum |x w| ~ 20), through a bounded logistic
    # (derivative <= 1/4): the factor is ~1e-4 absolute at worst, times |x| <= 5.
    return Case((w, x, y), compiled, per_example_grads_numpy, jax_fn, tolerance=(1e-4, 5e-5))


def build_rosenbrock_hessian(ctx: Context) -> Case:
    x = np.linspace(-1.2, 1.2, 100, dtype=np.float32)
    compiled, jax_fn, _ = peers(rosenbrock_hessian, ctx)
    # Entries up to ~2000 from a few f32 products and sums: a few ulp of 2000 (~1e-3).
    return Case((x,), compiled, rosenbrock_hessian_numpy, jax_fn, tolerance=(1e-5, 1e-3))


TRANSFORM_WORKLOADS = (
    Workload("W18.train_step", "W5 MLP training step, batch 256 f32: value_and_grad of softmax cross-entropy "
             "and an SGD update (numpy: none; checked against the interpreter)", build_training_step),
    Workload("W18.remat_train_step", "the W5 MLP training step with each hidden layer checkpointed "
             "(recomputed in the backward pass), batch 256 f32", lambda ctx: build_training_step(ctx, remat_training_step)),
    Workload("W18.cnn_train_step", "small CNN training step, batch 32 28x28x1 f32: two 3x3 convs with relu and "
             "2x2 max pooling, a dense layer; value_and_grad and SGD (checked against the interpreter)",
             build_cnn_training_step),
    Workload("W18.per_example_grads", "per-example gradients vmap(grad) of logistic regression, 4096 x 512 f32",
             build_per_example_grads),
    Workload("W18.hessian", "hessian (jacfwd of jacrev) of the 100-variable Rosenbrock function, f32",
             build_rosenbrock_hessian),
)
