"""Limited-memory BFGS with a backtracking (Armijo) line search, for small dense problems.

Each call of the objective may be a whole pass over a dataset (a model's objective is then a
reduction over the stream), so the search spends as few evaluations as it can: the first
trial step is the quasi-Newton step, halved until the Armijo condition holds. Every accepted
step lowers the objective, which is what a generalised EM M-step needs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

#: Armijo sufficient-decrease constant.
ARMIJO_C1 = 1e-4
#: Step halvings tried before the search gives up.
MAX_HALVINGS = 20


@dataclass
class LbfgsResult:
    """Outcome of :func:`lbfgs_minimize`.

    Attributes
    ----------
    x : ndarray
        Best point found (never worse than the start).
    value : float
        Objective at ``x``.
    grad : ndarray
        Gradient at ``x``.
    n_iter, n_eval : int
        Accepted steps and objective evaluations (the start's included).
    """

    x: np.ndarray
    value: float
    grad: np.ndarray
    n_iter: int
    n_eval: int


def lbfgs_minimize(fun: Callable[[np.ndarray], tuple[float, np.ndarray]], x0: np.ndarray, *,
                   max_iter: int = 10, memory: int = 5, h0: np.ndarray | float = 1.0,
                   start: tuple[float, np.ndarray] | None = None,
                   gtol: float | np.ndarray = 1e-8,
                   measure: Callable[[np.ndarray], np.ndarray] | None = None) -> LbfgsResult:
    """Minimise a smooth function with L-BFGS (Nocedal and Wright, Alg. 7.4 and 7.5).

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (value, gradient)``.
    x0 : ndarray
        Starting point (any shape; the gradient has the same shape).
    max_iter : int
        Accepted steps at most.
    memory : int
        Correction pairs kept.
    h0 : float or ndarray
        Initial inverse Hessian (a scalar or a diagonal shaped like ``x0``) used until the
        first correction pair exists; afterwards the usual ``s.y / y.y`` scaling.
    start : (value, gradient), optional
        ``fun(x0)`` when already known (saves one evaluation).
    gtol : float or ndarray
        Stop when every gradient entry is below this in absolute value (a scalar, or one
        bound per entry shaped like ``x0``).
    measure : callable, optional
        ``measure(gradient)``: the gradient in the coordinates the stop is judged in (the
        problem's own, when ``x`` is a linear change of them: the gradient times the
        map's transpose), shaped like ``x0``; every entry of it must be below ``gtol``.
        None: the gradient itself.

    Returns
    -------
    LbfgsResult
    """
    x = np.array(x0, dtype=np.float64)
    shape = x.shape
    if start is None:
        value, grad = fun(x)
        n_eval = 1
    else:
        value, grad = start
        n_eval = 0
    value = float(value)
    grad = np.asarray(grad, dtype=np.float64).reshape(shape)
    diag0 = np.broadcast_to(np.asarray(h0, dtype=np.float64), shape)
    pairs: list[tuple[np.ndarray, np.ndarray, float]] = []
    n_iter = 0
    bound = np.broadcast_to(np.asarray(gtol, dtype=np.float64), shape)

    def above(g: np.ndarray) -> bool:
        return bool(np.any(np.abs(g if measure is None else measure(g)) > bound))

    while n_iter < max_iter and above(grad):
        direction = -two_loop(grad, pairs, diag0)
        slope = float(np.vdot(grad, direction))
        if slope >= 0.0:  # not a descent direction: restart from the scaled gradient
            pairs.clear()
            direction = -diag0 * grad
            slope = float(np.vdot(grad, direction))
            if slope >= 0.0:
                break
        step = 1.0
        accepted = False
        for _ in range(MAX_HALVINGS):
            trial = x + step * direction
            t_value, t_grad = fun(trial)
            n_eval += 1
            t_value = float(t_value)
            if np.isfinite(t_value) and t_value <= value + ARMIJO_C1 * step * slope:
                accepted = True
                break
            step *= 0.5
        if not accepted:
            break
        t_grad = np.asarray(t_grad, dtype=np.float64).reshape(shape)
        s, yv = trial - x, t_grad - grad
        sy = float(np.vdot(s, yv))
        if sy > 1e-12 * float(np.vdot(yv, yv)):
            pairs.append((s, yv, 1.0 / sy))
            if len(pairs) > memory:
                pairs.pop(0)
        x, value, grad = trial, t_value, t_grad
        n_iter += 1
    return LbfgsResult(x, value, grad, n_iter, n_eval)


def two_loop(grad: np.ndarray, pairs: list[tuple[np.ndarray, np.ndarray, float]],
              diag0: np.ndarray) -> np.ndarray:
    """The L-BFGS product ``H grad`` (two-loop recursion)."""
    q = grad.copy()
    alphas = []
    for s, y, rho in reversed(pairs):
        a = rho * float(np.vdot(s, q))
        alphas.append(a)
        q -= a * y
    if pairs:
        s, y, _ = pairs[-1]
        r = (float(np.vdot(s, y)) / float(np.vdot(y, y))) * q
    else:
        r = diag0 * q
    for (s, y, rho), a in zip(pairs, reversed(alphas), strict=True):
        b = rho * float(np.vdot(y, r))
        r += (a - b) * s
    return r
