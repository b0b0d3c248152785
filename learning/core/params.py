"""scikit-learn's estimator protocol without scikit-learn: ``get_params`` / ``set_params``, a
``clone`` and the fitted check.

An estimator's ``__init__`` stores its keyword arguments under their own names and nothing
else; :class:`Params` reads them back from the signature, as ``sklearn.base.BaseEstimator``
does, so ``sklearn.base.clone`` and grid searches work on Tally's learners too where
scikit-learn is installed (the served core does not need it).
"""

from __future__ import annotations

import copy
import inspect

__all__ = ["NotFittedError", "Params", "check_is_fitted", "clone"]


class NotFittedError(ValueError, AttributeError):
    """An estimator used before ``fit`` (a ValueError and an AttributeError, as scikit-learn's)."""


class Params:
    """``get_params`` / ``set_params`` / ``repr`` from the ``__init__`` signature."""

    @classmethod
    def _param_names(cls) -> list[str]:
        signature = inspect.signature(cls.__init__)
        return sorted(
            name
            for name, parameter in signature.parameters.items()
            if name != "self" and parameter.kind is not parameter.VAR_KEYWORD
        )

    def get_params(self, deep: bool = True) -> dict:
        """The hyperparameters by name (with ``deep``, nested estimators' as ``name__key``)."""
        out = {}
        for name in self._param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{name}__{key}", v) for key, v in value.get_params().items())
            out[name] = value
        return out

    def set_params(self, **params) -> Params:
        """Set hyperparameters by name (nested ones as ``name__key``); returns ``self``."""
        names = self._param_names()
        nested: dict[str, dict] = {}
        for key, value in params.items():
            name, _, rest = key.partition("__")
            if name not in names:
                raise ValueError(f"{type(self).__name__} has no parameter {name!r}")
            if rest:
                nested.setdefault(name, {})[rest] = value
            else:
                setattr(self, name, value)
        for name, values in nested.items():
            getattr(self, name).set_params(**values)
        return self

    def __repr__(self) -> str:
        signature = inspect.signature(type(self).__init__)
        changed = []
        for name in self._param_names():
            default = signature.parameters[name].default
            value = getattr(self, name)
            try:
                same = value is default or bool(value == default)
            except (TypeError, ValueError):  # arrays compare element-wise
                same = False
            if not same:
                changed.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(changed)})"


def clone(estimator):
    """A new unfitted estimator with deep copies of ``estimator``'s hyperparameters."""
    params = {k: copy.deepcopy(v) for k, v in estimator.get_params(deep=False).items()}
    return type(estimator)(**params)


def check_is_fitted(estimator, attribute: str = "tagger_") -> None:
    """Raise :class:`NotFittedError` unless ``estimator`` has the learned ``attribute``."""
    if not hasattr(estimator, attribute):
        raise NotFittedError(
            f"This {type(estimator).__name__} is not fitted yet: call fit before using it."
        )
