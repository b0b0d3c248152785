"""How `benchmark_faults` reads its history into refusal times (`devtools.faults.window_figures`),
on small hand-written histories whose answer is known."""

from devtools.faults import Attempt, Fault, History, window_figures


def _history(attempts: list[Attempt], offline=()) -> History:
    kill = Fault("gunicorn_worker_kill", started=10.0, back=10.2, reference=10.0)
    return History(attempts=attempts, faults=[kill], offline=list(offline), started=0.0, ended=30.0)


def test_refusal_runs_from_the_first_failure_to_the_next_stored_answer():
    attempts = [
        Attempt("submit", 9.0, 9.1, "ok", phone=1),
        Attempt("submit", 10.1, 10.2, "connection (kept-alive: ConnectionResetError)", phone=1),
        Attempt("submit", 10.3, 10.4, "connection (new: ConnectionResetError)", phone=1),
        Attempt("submit", 10.6, 10.9, "ok", phone=1),
    ]
    refusal = window_figures(_history(attempts))["longest_refusal_seconds"]
    assert refusal["gunicorn_worker_kill"] == 0.8


def test_time_a_phone_spent_offline_by_choice_is_not_a_refusal():
    attempts = [
        Attempt("submit", 10.1, 10.2, "connection (kept-alive: ConnectionResetError)", phone=1),
        Attempt("submit", 12.6, 12.9, "ok", phone=1),
        Attempt("submit", 10.1, 10.2, "connection (kept-alive: ConnectionResetError)", phone=2),
        Attempt("submit", 10.3, 10.6, "ok", phone=2),
    ]
    offline = [(1, 10.3, 12.5)]  # phone 1 went offline after its failure
    refusal = window_figures(_history(attempts, offline))["longest_refusal_seconds"]
    assert refusal["gunicorn_worker_kill"] == 0.6  # phone 1: 2.8 s - 2.2 s away; phone 2: 0.5 s


def test_a_phone_served_again_and_failing_later_starts_a_new_refusal():
    """Served at 10.5, the phone's duplicate send failed at 12.0 on a stale spare connection while
    its twin was stored: two short refusals, not one from 10.1 to 12.2."""
    attempts = [
        Attempt("submit", 10.1, 10.2, "connection (kept-alive: ConnectionResetError)", phone=1),
        Attempt("submit", 10.3, 10.5, "ok", phone=1),
        Attempt("submit", 11.0, 11.2, "ok", phone=1),
        Attempt("submit", 12.0, 12.0, "connection (kept-alive: IncompleteReadError)", phone=1),
        Attempt("submit", 12.0, 12.2, "ok", phone=1),
    ]
    refusal = window_figures(_history(attempts))["longest_refusal_seconds"]
    assert refusal["gunicorn_worker_kill"] == 0.4
