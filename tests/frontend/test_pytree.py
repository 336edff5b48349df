import collections
import gc
import weakref

from cdnajit import tree_flatten, tree_map, tree_unflatten


def test_flatten_orders_dict_keys_and_round_trips():
    Pair = collections.namedtuple("Pair", "a b")
    tree = {"z": [1, (2, None)], "a": Pair(3, {"k": 4})}
    leaves, treedef = tree_flatten(tree)
    assert leaves == [3, 4, 1, 2]
    assert tree_unflatten(treedef, leaves) == tree
    assert treedef.num_leaves == 4
    assert hash(treedef) == hash(tree_flatten(tree)[1])


def test_tree_map_over_several_trees():
    assert tree_map(lambda x, y: x + y, (1, [2]), (10, [20])) == (11, [22])


def test_treedefs_of_different_structures_differ():
    assert tree_flatten((1, 2))[1] != tree_flatten([1, 2])[1]
    assert tree_flatten({"a": 1})[1] != tree_flatten({"b": 1})[1]


def test_flatten_and_unflatten_keep_no_leaf_alive():
    # A leaf must die with its last reference, not wait for the cyclic collector: a jitted call's
    # results go through tree_unflatten, and large ones would otherwise pile up between collections.
    class Leaf:
        pass
    gc.disable()
    try:
        leaf = Leaf()
        watch = weakref.ref(leaf)
        leaves, treedef = tree_flatten({"a": [leaf, (1, None)]})
        rebuilt = tree_unflatten(treedef, leaves)
        del leaf, leaves, rebuilt
        assert watch() is None
    finally:
        gc.enable()
