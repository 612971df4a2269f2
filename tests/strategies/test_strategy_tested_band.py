"""The tested band of min_share: a group between ``min_share`` and ``min_share_tested`` of the
trajectories joins its nearest strategy only when the arms take the two alike."""
import numpy as np
import pytest

from mechanism.analysis._strategies.clustering import VARIANT_ALPHA, agglomerative
from mechanism.analysis._strategies.families import arm_test

# three distinct rows far apart (distance 10), the third nearer the first (3): strategies A and
# B of 100 trajectories each, and C of 16 (7.4 % of 216, between min_share and min_share_tested)
DIST = np.array([[0.0, 10.0, 3.0], [10.0, 0.0, 10.0], [3.0, 10.0, 0.0]])
COUNTS = np.array([100.0, 100.0, 16.0])
BAND = {"resolution": 1.0, "linkage": "average", "min_share": 0.07, "min_share_tested": 0.08}


def _labels(arms_of_c, **kw):
    arms = np.array([[50.0, 50.0], [50.0, 50.0], arms_of_c])
    return agglomerative(DIST, COUNTS, arms=arms, **{**BAND, **kw}).tolist()


def test_a_fragment_the_arms_take_alike_joins_its_nearest():
    labels = _labels([8.0, 8.0])
    assert labels[2] == labels[0] != labels[1]


def test_a_small_strategy_one_arm_took_up_stands():
    assert arm_test(np.array([[16.0, 0.0], [50.0, 50.0]])) < VARIANT_ALPHA
    assert len(set(_labels([16.0, 0.0]))) == 3


def test_without_arms_only_min_share_applies():
    assert len(set(agglomerative(DIST, COUNTS, **BAND).tolist())) == 3
    # and the band is off when it lies under min_share
    assert len(set(_labels([8.0, 8.0], min_share_tested=0.0))) == 3


@pytest.mark.parametrize("arms_of_c", [[8.0, 8.0], [16.0, 0.0]])
def test_under_min_share_a_group_joins_whatever_its_arms(arms_of_c):
    # C at 16 of 216 is under a min_share of 0.08: a variant, never tested
    labels = _labels(arms_of_c, min_share=0.08, min_share_tested=0.1)
    assert labels[2] == labels[0]


def test_one_arm_alone_says_nothing_and_the_fragment_joins():
    arms = np.array([[100.0], [100.0], [16.0]])
    labels = agglomerative(DIST, COUNTS, arms=arms, **BAND).tolist()
    assert labels[2] == labels[0]
