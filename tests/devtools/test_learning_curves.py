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


def test_the_campaign_chart_draws_both_policies():
    from devtools.management.commands.learning_curves import campaign_chart

    svg = campaign_chart(
        {"uniform": [(100, 85.0), (200, 88.0)], "adaptive": [(100, 85.0), (200, 89.5)]}
    )
    assert svg.startswith("<svg") and "tasks drawn uniformly" in svg
    assert "tasks chosen by the model" in svg


def test_the_online_chart_draws_online_and_batch_for_each_setting():
    from devtools.management.commands.learning_curves import online_chart

    curve = {"online": [(10, 80.0), (100, 92.5)], "batch": [(10, 81.0), (100, 93.0)]}
    svg = online_chart({"curves": {"all tags": curve, "2 tags": curve}})
    assert svg.startswith("<svg")
    for label in ("online, all tags", "batch, all tags", "online, 2 tags", "batch, 2 tags"):
        assert label in svg
