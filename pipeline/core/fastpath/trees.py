"""Hoeffding tree classifiers and ARF, evaluated from their nodes.

>>> from river import tree
>>> model = tree.HoeffdingAdaptiveTreeClassifier(grace_period=20, seed=1)
>>> import random
>>> gen = random.Random(0)
>>> for _ in range(500):
...     x = {"a": gen.random(), "b": gen.random()}
...     model.learn_one(x, x["a"] > 0.5)
>>> fast = TreeClassifierFast(model)
>>> rows = [{"a": gen.random(), "b": gen.random()} for _ in range(50)]
>>> fast.rows(rows, "proba", None) == [model.predict_proba_one(r) for r in rows]
True
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from river.base import Classifier
from river.forest.adaptive_random_forest import ARFClassifier
from river.tree import HoeffdingAdaptiveTreeClassifier, HoeffdingTreeClassifier
from river.tree.base import Branch
from river.tree.nodes.arf_htc_nodes import (
    RandomLeafMajorityClass,
    RandomLeafNaiveBayes,
    RandomLeafNaiveBayesAdaptive,
)
from river.tree.nodes.hatc_nodes import (
    AdaBranchClassifier,
    AdaLeafClassifier,
    AdaNomBinaryBranchClass,
    AdaNomMultiwayBranchClass,
    AdaNumBinaryBranchClass,
    AdaNumMultiwayBranchClass,
)
from river.tree.nodes.htc_nodes import LeafMajorityClass, LeafNaiveBayes, LeafNaiveBayesAdaptive

from .base import FastModel, Unsupported, tree_kind
from .chains import chain_parts, forest_chain
from .leaves import MajorityLeaf, NaiveBayesLeaf
from .tree_curves import class_curves, forest_class_curves
from .walk import first_test, is_branch, leaf_of, rewalk, runs, split_features, walk

__all__ = ["TreeClassifierFast", "ForestClassifierFast", "list_output"]

# the leaves whose prediction the fast path reproduces, by how they choose naive Bayes
_LEAF_MODES = {
    LeafMajorityClass: "mc", RandomLeafMajorityClass: "mc",
    LeafNaiveBayes: "nb", RandomLeafNaiveBayes: "nb",
    LeafNaiveBayesAdaptive: "nba", RandomLeafNaiveBayesAdaptive: "nba",
}


#: calls of a tree in a row that may not meet a leaf before its kept plan goes
_IDLE_CALLS = 32

# the adaptive tree's branches (their traverse adds alternate trees)
_ADA_BRANCHES = frozenset({AdaNomBinaryBranchClass, AdaNumBinaryBranchClass, AdaNomMultiwayBranchClass,
                           AdaNumMultiwayBranchClass})


def _is_classifier_tree(model: Any) -> str | None:
    """"ht" or "hat" if ``model`` predicts with river's (adaptive) Hoeffding tree code."""
    return tree_kind(model, "predict_proba_one", HoeffdingAdaptiveTreeClassifier, HoeffdingTreeClassifier)


class _Leaf:
    """A leaf's prediction during one call, as the positions and values of the tree's classes:
    its distribution (majority class or naive Bayes), and for an adaptive tree divided by
    ``sum * error * error``."""

    __slots__ = ("inner", "pos", "error", "const", "same_order", "node", "state", "idle")

    def __init__(self, inner: Any, pos: list[int], error: float | None, node: Any = None, state: Any = None):
        self.inner = inner
        self.pos = pos
        self.error = error
        #: the leaf's classes are the tree's, in the tree's order
        self.same_order = pos == list(range(len(pos)))
        self.const = self._weigh(inner.dist) if isinstance(inner, MajorityLeaf) else None
        #: the river leaf and what its prediction reads (:func:`leaf_state`), for a plan kept between calls
        self.node = node
        self.state = state
        #: calls of its tree since one last met this leaf
        self.idle = 0

    def _weigh(self, dist: list) -> list:
        error = self.error
        if error is None:
            return dist
        factor = sum(dist) * error * error
        if factor == 0 or factor != factor:  # 0 or NaN: river leaves the values as they are
            return list(dist)
        m = 1 / factor
        return [v * m for v in dist]

    def row(self, row: dict) -> list:
        return self.const if self.const is not None else self._weigh(self.inner.row(row))

    def replaced(self, x: dict, feature: str, value: Any) -> list:
        if self.const is not None:
            return self.const
        return self._weigh(self.inner.replaced(x, feature, value))


def leaf_state(leaf: Any) -> tuple:
    """What a plain tree's leaf's prediction reads beyond the tree's options, all of which only its
    ``learn_one`` changes: its class weights, its splitters and the nba leaf's two counts."""
    splitters = leaf.splitters
    return (tuple(leaf.stats.items()), splitters, -1 if splitters is None else len(splitters),
            getattr(leaf, "_mc_correct_weight", None), getattr(leaf, "_nb_correct_weight", None))


class _Tree:
    """One tree classifier during one call: its leaves' predictions, computed once each. A plain
    tree's leaf plans outlive the call (:meth:`plans`) while the leaf's :func:`leaf_state` holds."""

    __slots__ = ("tree", "hat", "root", "classes", "n", "keys", "_leaves", "_index", "_kept",
                 "_x", "_x_nodes", "_x_starts", "_x_leaves", "_x_splits", "_x_same", "_x_depends", "_x_split_values")

    def __init__(self, tree: Any, keys: Any, kept: tuple | None = None):
        kind = _is_classifier_tree(tree)
        if kind is None:
            raise Unsupported(f"{type(tree).__name__} is not a verified Hoeffding tree classifier")
        self.tree = tree
        self.hat = kind == "hat"
        self.root = tree._root
        #: the keys of predict_proba_one's dict, in its order
        self.classes = list(tree.classes) if self.hat else sorted(tree.classes)
        self.n = len(self.classes)
        self.keys = keys
        self._leaves: dict[int, _Leaf] = {}
        self._index: dict | None = None
        self._x: dict | None = None
        self._x_split_values: dict | None = None
        #: the plans of the tree's last call, by leaf id, if they are of this tree, classes and features
        self._kept: dict[int, _Leaf] = {}
        if kept is not None and not self.hat and kept[0] is tree and kept[1] == self.classes and kept[2] == keys:
            self._kept = kept[3]

    def plans(self) -> tuple:
        """The leaf plans the next call of this tree may take: those of the leaves met, and of
        earlier leaves not met for fewer than :data:`_IDLE_CALLS` calls."""
        leaves = self._leaves
        for key, plan in self._kept.items():
            if key not in leaves and plan.idle < _IDLE_CALLS:
                plan.idle += 1
                leaves[key] = plan
        self._kept = {}
        return self.tree, self.classes, set(self.keys), leaves

    def row(self, row: dict) -> list:
        """The values of ``predict_proba_one(row)``, in :attr:`classes` order. A row that
        equals the last ``x`` on every feature a branch of ``x``'s path tests takes that path."""
        split_values = self._x_split_values
        if split_values is not None and all(row[f] == v for f, v in split_values.items()):
            leaves = self._x_leaves
        else:
            leaves = self._found(row)
        return self._combine(leaves, [leaf.row(row) for leaf in leaves])

    def replaced(self, x: dict, feature: str, value: Any) -> list:
        """:meth:`row` of ``x`` with ``feature = value``: the path is ``x``'s unless a branch on
        it tests ``feature``, and a leaf recomputes only the factor of ``feature``."""
        if x is not self._x:
            self._see(x)
        if feature in self._x_splits:  # x's path down to the first branch that tests feature, walked on from there
            row = x.copy()
            row[feature] = value
            if not self.hat:  # its one leaf: x's, whose factors at x are kept, or one met anew, evaluated at the row
                leaf = self._leaf(leaf_of(self.start(feature), row))
                dist = leaf.replaced(x, feature, value) if leaf is self._x_leaves[0] else leaf.row(row)
                return self._combine((leaf,), (dist,))
            leaves = self._leaves_of(rewalk(self._x_nodes, row, feature) or self._nodes(row))
            return self._combine(leaves, [leaf.replaced(x, feature, value) for leaf in leaves])
        leaves = self._x_leaves
        if not self.depends(feature):  # the same prediction as x
            return self.at_x()
        if len(leaves) == 1:
            leaf = leaves[0]
            if leaf.same_order and leaf.const is None and len(leaf.inner.classes) == self.n:
                # one leaf with all the classes, in the tree's order
                return leaf.inner.replaced_many(x, feature, [value], leaf.error)[0]
        return self._combine(leaves, [leaf.replaced(x, feature, value) for leaf in leaves])

    def replaced_batch(self, x: dict, pairs: list) -> list:
        """:meth:`replaced` of every pair; a run of pairs of one feature that no branch on
        ``x``'s path tests (an ICE curve) goes through ``x``'s leaves in one loop."""
        if x is not self._x:
            self._see(x)
        out: list = []
        for f, i, j in runs(pairs):
            if j - i > 1 and f not in self._x_splits:
                if self.depends(f):
                    out += self._curve(x, f, [v for _, v in pairs[i:j]])
                else:  # neither the path nor a leaf reads f: x's prediction for every value
                    out += [self.at_x()] * (j - i)
            else:
                out += [self.replaced(x, f, v) for _, v in pairs[i:j]]
        return out

    def _curve(self, x: dict, feature: str, values: list) -> list:
        """The predictions at ``x`` with ``feature`` at each of ``values``, all reaching ``x``'s
        leaves: each leaf's distributions for all the values, then combined value by value."""
        leaves = self._x_leaves
        parts = [None if leaf.const is not None else leaf.inner.replaced_many(x, feature, values, None)
                 for leaf in leaves]
        hat = self.hat
        parts = [[leaf.const] * len(values) if part is None else [leaf._weigh(d) for d in part]
                 for leaf, part in zip(leaves, parts, strict=True)]
        out = []
        for k in range(len(values)):
            proba = [0.0] * self.n
            for leaf, part in zip(leaves, parts, strict=True):
                dist = part[k]
                if hat:
                    for p, v in zip(leaf.pos, dist, strict=True):
                        proba[p] = proba[p] + v
                else:
                    for p, v in zip(leaf.pos, dist, strict=True):
                        proba[p] = v
            if hat:
                factor = sum(proba)
                if factor != 0 and factor == factor:
                    m = 1 / factor
                    proba = [v * m for v in proba]
            out.append(proba)
        return out

    def forget_row(self) -> None:
        """Drop x's path and its leaves' factors: the next call sees its row anew even if it is
        that same dict (the caller no longer watches it for changes in place)."""
        self._x = None
        for plan in self._leaves.values():
            if not isinstance(plan.inner, MajorityLeaf):  # (a naive Bayes leaf keeps x's factors)
                plan.inner.forget_row()

    def depends(self, feature: str) -> bool:
        """Whether one of ``x``'s leaves reads ``feature`` (on ``x``'s path, a row that moves
        only a feature no leaf reads has ``x``'s prediction)."""
        depends = self._x_depends.get(feature)
        if depends is None:
            depends = self._x_depends[feature] = any(leaf.inner.depends_on(feature) for leaf in self._x_leaves)
        return depends

    def at_x(self) -> list:
        """:meth:`row` of ``x``, computed once."""
        same = self._x_same
        if same is None:
            same = self._x_same = self.row(self._x)  # type: ignore[arg-type]
        return same

    def start(self, feature: str) -> Any:
        """The first branch on ``x``'s path that tests ``feature`` (None: none does): a row
        that differs from ``x`` in ``feature`` alone takes ``x``'s path down to it."""
        starts = self._x_starts
        if feature in starts:
            return starts[feature]
        node = starts[feature] = first_test(self._x_nodes, feature)
        return node

    def _see(self, x: dict) -> None:
        self._x = x
        self._x_starts: dict[str, Any] = {}
        nodes = self._x_nodes = self._nodes(x)
        self._x_leaves = self._leaves_of(nodes)
        self._x_splits = split_features(nodes)
        self._x_split_values = {f: x[f] for f in self._x_splits}  # what x's path depends on
        self._x_same: list | None = None
        self._x_depends: dict[str, bool] = {}

    def _combine(self, leaves: list, dists: list) -> list:
        proba = [0.0] * self.n
        if not self.hat:  # proba.update(leaf distribution)
            for leaf, dist in zip(leaves, dists, strict=True):
                for p, v in zip(leaf.pos, dist, strict=True):
                    proba[p] = v
            return proba
        for leaf, dist in zip(leaves, dists, strict=True):  # add_dict_values, then normalise
            for p, v in zip(leaf.pos, dist, strict=True):
                proba[p] = proba[p] + v
        factor = sum(proba)
        if factor == 0 or factor != factor:
            return proba
        m = 1 / factor
        return [v * m for v in proba]

    def _nodes(self, row: dict) -> list:
        """The nodes river visits for ``row`` (its walk; just the root if that is a leaf)."""
        root = self.root
        if root is None:
            return []
        if not is_branch(root):
            return [root]
        traverse = type(root).traverse
        if traverse is not (AdaBranchClassifier.traverse if self.hat else Branch.traverse):
            raise Unsupported(f"{type(root).__name__} traverses its own way")
        return walk(root, row)

    def _found(self, row: dict) -> list:
        return self._leaves_of(self._nodes(row))

    def _leaves_of(self, nodes: list) -> list:
        """The leaves whose predictions ``predict_proba_one`` combines, given the walk."""
        if not nodes:
            return []
        if not self.hat or len(nodes) == 1:
            return [self._leaf(nodes[-1])]
        found = []
        for node in nodes:
            if not is_branch(node):
                continue
            if node.__class__ not in _ADA_BRANCHES:
                raise Unsupported(f"{type(node).__name__} is not a verified adaptive branch")
            if node._alternate_tree:
                alt = node._alternate_tree
                if isinstance(alt, AdaBranchClassifier):  # river would add a list here and fail
                    raise Unsupported("an alternate tree that is a branch")
                found.append(self._leaf(alt))
        found.append(self._leaf(nodes[-1]))
        return found

    def _leaf(self, leaf: Any) -> _Leaf:
        plan = self._leaves.get(id(leaf))
        if plan is None:
            plan = self._kept.pop(id(leaf), None)
            if plan is not None and plan.node is leaf and plan.state == leaf_state(leaf):
                plan.idle = 0
                if not isinstance(plan.inner, MajorityLeaf):
                    plan.inner.new_call()
            else:
                plan = self._plan(leaf)
            self._leaves[id(leaf)] = plan
        return plan

    def _plan(self, leaf: Any) -> _Leaf:
        tree = self.tree
        if self.hat:
            if type(leaf) is not AdaLeafClassifier:
                raise Unsupported(f"{type(leaf).__name__} in an adaptive tree")
            if not leaf.stats:  # river's prediction is None, and adding it fails
                raise Unsupported("an empty leaf of an adaptive tree")
            option = tree.leaf_prediction
            if not leaf.is_active() or option == tree._MAJORITY_CLASS:
                mode = "mc"
            elif option == tree._NAIVE_BAYES:
                mode = "nb"
            else:
                mode = "nba"
        else:
            mode = _LEAF_MODES.get(type(leaf))  # type: ignore[assignment]
            if mode is None:
                raise Unsupported(f"{type(leaf).__name__} is not a verified leaf")
        if mode == "nb":
            bayes = leaf.is_active() and leaf.total_weight >= tree.nb_threshold
        elif mode == "nba":
            bayes = leaf.is_active() and leaf._nb_correct_weight >= leaf._mc_correct_weight
        else:
            bayes = False
        inner = NaiveBayesLeaf(leaf.stats, leaf.splitters, self.keys) if bayes else MajorityLeaf(leaf.stats)
        index = self._class_index()
        try:
            pos = [index[c] for c in inner.classes]
        except KeyError:
            raise Unsupported("a leaf knows a class its tree does not") from None
        if self.hat:
            return _Leaf(inner, pos, leaf._mean_error.get())
        return _Leaf(inner, pos, None, leaf, leaf_state(leaf))

    def _class_index(self) -> dict:
        if self._index is None:
            self._index = {c: i for i, c in enumerate(self.classes)}
        return self._index

    def output(self, values: list, output: str, target_class: Any) -> Any:
        if output == "proba_of":  # the dict's get, by the same key equality
            i = self._class_index().get(target_class)
            return 0.0 if i is None else float(values[i])
        return list_output(self.classes, values, output, target_class)


def list_output(classes: list, values: list, output: str, target_class: Any, counter: bool = False) -> Any:
    """:func:`~streamxai.core.fastpath.base.to_output` of the dict ``zip(classes, values)``
    (a ``Counter`` when ``counter``), without building it unless ``output="proba"``."""
    if output == "proba":
        d = dict(zip(classes, values, strict=True))
        return Counter(d) if counter else d
    if output == "proba_of":
        i = {c: i for i, c in enumerate(classes)}.get(target_class) if classes else None
        return 0.0 if i is None else float(values[i])
    if not values:
        return None
    best = 0
    for i in range(1, len(values)):  # max(d, key=d.get): the first of the largest
        if values[i] > values[best]:
            best = i
    label = classes[best]
    return float(label) if output == "value" else label


class _Forest:
    """An ARFClassifier during one call."""

    __slots__ = ("trees", "weights", "_shared")

    def __init__(self, forest: Any, keys: Any, kept: dict | None = None):
        if len(forest) == 0:  # river builds the ensemble on this first prediction
            raise Unsupported("an ARF before its first event")
        kept = kept or {}
        self.trees = [_Tree(m, keys, kept.get(id(m))) for m in forest]
        weighted = not forest.disable_weighted_vote
        # a member's distribution is multiplied by its accuracy when that is > 0
        self.weights = [mv if weighted and mv > 0.0 else None for mv in (m.get() for m in forest._metrics)]
        classes = self.trees[0].classes
        #: the members' common classes (in one order), or None
        self._shared = classes if classes and all(t.classes == classes for t in self.trees) else None

    def _sum(self, parts: list) -> tuple[list, list, bool]:
        """Counter.update over the members' distributions, then divided by the total: the
        classes, the values and whether river returns the (unnormalised) Counter itself."""
        classes = self._shared
        if classes is not None and len(classes) == 2:  # the sums below, two classes at a time
            a0 = a1 = 0.0
            first = True
            for mv, (v0, v1) in zip(self.weights, parts, strict=True):
                if mv is not None:
                    v0, v1 = v0 * mv, v1 * mv
                if first:
                    a0, a1, first = v0, v1, False
                else:
                    a0, a1 = v0 + a0, v1 + a1
            total = 0 + a0 + a1  # sum([a0, a1])
            if total > 0:
                return classes, [a0 / total, a1 / total], False
            return classes, [a0, a1], True
        if classes is not None:
            # the members share their classes and their order: the Counter's sums, as lists
            acc_list: list | None = None
            for mv, vals in zip(self.weights, parts, strict=True):
                if mv is not None:
                    vals = [v * mv for v in vals]
                acc_list = list(vals) if acc_list is None else [c + a for c, a in zip(vals, acc_list, strict=True)]
            total = sum(acc_list)  # type: ignore[arg-type]
            if total > 0:
                return classes, [p / total for p in acc_list], False  # type: ignore[union-attr]
            return classes, acc_list, True  # type: ignore[return-value]
        acc: dict = {}
        for tree, mv, vals in zip(self.trees, self.weights, parts, strict=True):
            if mv is not None:
                vals = [v * mv for v in vals]
            if acc:  # Counter.update: new count + old count
                get = acc.get
                for k, c in zip(tree.classes, vals, strict=True):
                    acc[k] = c + get(k, 0)
            else:
                acc.update(zip(tree.classes, vals, strict=True))
        total = sum(acc.values())
        if total > 0:
            return list(acc), [p / total for p in acc.values()], False
        return list(acc), list(acc.values()), True

    def row(self, row: dict) -> tuple[list, list, bool]:
        return self._sum([t.row(row) for t in self.trees])

    def replaced(self, x: dict, feature: str, value: Any) -> tuple[list, list, bool]:
        return self._sum([t.replaced(x, feature, value) for t in self.trees])

    def forget_row(self) -> None:
        """Each member's :meth:`_Tree.forget_row`."""
        for t in self.trees:
            t.forget_row()

    def plans(self) -> dict:
        """Each member's :meth:`_Tree.plans`, by the member's id."""
        return {id(t.tree): t.plans() for t in self.trees}

    def replaced_batch(self, x: dict, pairs: list) -> list:
        parts = [t.replaced_batch(x, pairs) for t in self.trees]
        return [self._sum([p[k] for p in parts]) for k in range(len(pairs))]


class TreeClassifierFast(FastModel):
    """``HoeffdingTreeClassifier`` (one leaf per row) and ``HoeffdingAdaptiveTreeClassifier``
    (every alternate tree on the path adds its leaf's distribution weighted by
    ``1 / (sum * error^2)``, then normalised); :class:`ForestClassifierFast` serves ``ARFClassifier``.
    Leaves: :mod:`streamxai.core.fastpath.leaves`; a leaf's mode is settled once per call."""

    name = "hoeffding_tree"

    @staticmethod
    def accepts(model: Any) -> bool:
        return _is_classifier_tree(model) is not None and type(model).predict_one is Classifier.predict_one

    def new_call(self, keys: Any) -> _Tree:
        return _Tree(self.model, keys)

    def token(self) -> Any:
        return self.model._train_weight_seen_by_model

    def output(self, call: Any, result: Any, output: str, target_class: Any) -> Any:
        return call.output(result, output, target_class)

    def curves(self, x: dict, features: Any, grids: Any, output: str, target_class: Any) -> Any:
        out = None
        if output == "proba_of":  # the curves of the features off x's path at once
            out = class_curves(self._scope_of(x), x, list(features), grids, target_class)
        return super().curves(x, features, grids, output, target_class) if out is None else out

    def outputs(self, call: Any, results: list, output: str, target_class: Any) -> list:
        if output == "proba_of":  # one class's probability: its position, once
            i = call._class_index().get(target_class)
            return [0.0] * len(results) if i is None else [float(v[i]) for v in results]
        return [call.output(r, output, target_class) for r in results]

    def coalitions(self, x: dict, order: list, donors: list, first: int, output: str, target_class: Any) -> list:
        """The output at ``x``, then at :func:`~streamxai.core.model.chain_rows`' rows (iSAGE's
        chain), each row reusing its neighbour's prediction when the feature that tells them
        apart is neither on its path nor read by its leaves (:mod:`.chains`)."""
        call = self._scope_of(x)
        return self.outputs(call, chain_parts([call], x, order, donors, first)[0], output, target_class)


class ForestClassifierFast(FastModel):
    """``ARFClassifier``: its members are Hoeffding tree classifiers."""

    name = "arf"

    @staticmethod
    def accepts(model: Any) -> bool:
        t = type(model)
        return (getattr(t, "predict_proba_one", None) is ARFClassifier.predict_proba_one
                and t.predict_one is Classifier.predict_one)

    def new_call(self, keys: Any) -> _Forest:
        """A new scope, taking the leaf plans of the scope it replaces, or of the one
        :meth:`invalidate` dropped, where they still hold (:class:`_Tree`)."""
        kept = self._call.plans() if self._call is not None else self._kept
        self._kept = None
        return _Forest(self.model, keys, kept)

    def invalidate(self, keep: bool = True) -> None:
        """:meth:`FastModel.invalidate`, keeping the leaf plans of the dropped scope for the
        next one unless ``keep`` is false."""
        call = getattr(self, "_call", None)
        self._kept = call.plans() if keep and call is not None else None
        super().invalidate(keep)

    def token(self) -> Any:
        forest = self.model
        return (tuple((id(m), m._train_weight_seen_by_model) for m in forest),
                tuple(m.get() for m in forest._metrics))

    def output(self, call: Any, result: Any, output: str, target_class: Any) -> Any:
        classes, values, counter = result
        return list_output(classes, values, output, target_class, counter)

    def outputs(self, call: Any, results: list, output: str, target_class: Any) -> list:
        if output != "proba_of":
            return [self.output(call, r, output, target_class) for r in results]
        out = []
        seen = pos = None
        for classes, values, _ in results:  # list_output's position of the class, once per classes list
            if classes is not seen:
                seen = classes
                pos = {c: k for k, c in enumerate(classes)}.get(target_class) if classes else None
            out.append(0.0 if pos is None else float(values[pos]))
        return out

    def curves(self, x: dict, features: Any, grids: Any, output: str, target_class: Any) -> Any:
        out = None
        if output == "proba_of":  # the members' curves as arrays, summed as predict_proba_one sums them
            out = forest_class_curves(self._scope_of(x), x, list(features), grids, target_class)
        return super().curves(x, features, grids, output, target_class) if out is None else out

    def coalitions(self, x: dict, order: list, donors: list, first: int, output: str, target_class: Any) -> list:
        """:meth:`TreeClassifierFast.coalitions` of the forest: every member's chain, summed
        row by row as ``predict_proba_one`` sums them."""
        call = self._scope_of(x)
        return self.outputs(call, forest_chain(call, x, order, donors, first), output, target_class)
