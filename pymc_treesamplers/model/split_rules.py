"""pymc-bart's ``split_rules``: how each covariate may split, in any of the spellings pymc-bart has used.

pymc-bart 0.13 takes one string per covariate (``"ContinuousSplit"``, ``"OneHotSplit"``); 0.12 took
instances of classes of these names with a ``Rule`` suffix, and ``SubsetSplitRule``. Here:

* continuous (``"ContinuousSplit"``, :class:`ContinuousSplitRule`): ``x <= c``, the default;
* one-hot (``"OneHotSplit"``, :class:`OneHotSplitRule`): the covariate's values are category labels and
  a split is "this value or another" (the coding a pandas category column gets, docs/categorical.md);
* subset (``"SubsetSplit"``, :class:`SubsetSplitRule`): a split sending any subset of the categories
  one way; not available (pymc-bart 0.13 refuses it too), so refused by name.
"""

from __future__ import annotations

__all__ = ["ContinuousSplitRule", "OneHotSplitRule", "SubsetSplitRule", "split_rule_kind"]


class ContinuousSplitRule:
    """Split a numeric covariate as ``x <= c`` (the default for every covariate).

    >>> split_rule_kind(ContinuousSplitRule), split_rule_kind(ContinuousSplitRule())
    ('continuous', 'continuous')
    """


class OneHotSplitRule:
    """The covariate's values are category labels; a split is "this value or another".

    >>> split_rule_kind(OneHotSplitRule)
    'one-hot'
    """


class SubsetSplitRule:
    """A split sending a subset of the categories one way: not available here (refused by name).

    >>> split_rule_kind("SubsetSplit")
    'subset'
    """


_KINDS = {"ContinuousSplit": "continuous", "OneHotSplit": "one-hot", "SubsetSplit": "subset"}


def split_rule_kind(rule) -> str:
    """``"continuous"``, ``"one-hot"`` or ``"subset"`` for a split rule in any of pymc-bart's spellings: a
    string (``"ContinuousSplit"``, also with a ``Rule`` suffix), a class or an instance of one (these
    classes, or pymc-bart 0.12's of the same names).

    >>> split_rule_kind("OneHotSplit"), split_rule_kind("OneHotSplitRule")
    ('one-hot', 'one-hot')
    """
    if isinstance(rule, str):
        name = rule
    elif isinstance(rule, type):
        name = rule.__name__
    else:
        name = type(rule).__name__
    kind = _KINDS.get(name.removesuffix("Rule"))
    if kind is None:
        raise ValueError(f"unknown split rule {rule!r}: use 'ContinuousSplit' (x <= c) or 'OneHotSplit' (the values "
                         "are category labels), as strings or pymc-bart's classes")
    return kind
