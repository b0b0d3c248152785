from devtools.management.commands.learning_curves import ALPHAS, information_shares
from learning.core.conllu import iter_conllu
from tests.support.ewt import ewt_slice


def test_the_privacy_study_reports_the_information_each_release_keeps():
    """On EWT's counts, krr keeps more of a count the larger α, and far more than the geometric
    mechanism, whose noise spans the whole window (the study's accuracy ranks them the same)."""
    train = list(iter_conllu(ewt_slice(300).splitlines()))
    krr = information_shares(train, 5, "krr")
    geometric = information_shares(train, 5, "geometric")
    assert [alpha for alpha, _ in krr] == list(ALPHAS)
    shares = [share for _, share in krr]
    assert 0 < shares[0] < shares[1] < shares[2] < 1
    assert 0.45 < dict(krr)[3.0] < 0.65
    assert dict(geometric)[3.0] < dict(krr)[3.0] / 3
