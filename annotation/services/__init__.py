"""Every write of the annotation app: typed, keyword-only `<thing>_<action>` functions, by
subject: `projects` (projects, tag sets, members), `corpus` (corpus import), `uploads` (an
upload imported at once or as a job), `observations` (answers, on the ORM), `verification`
(verification rounds), `rounds` (count rounds chosen by value). The rules of an answer are its
task kind's (`annotation.kinds`, re-exported here). Callers use them from here.

Task leasing lives in `annotation.scheduler`, the annotator's cycle in `annotation.cycle`;
reading in `annotation.selectors`; accounts in `accounts.services`.
"""

from annotation.services.corpus import corpus_import
from annotation.services.observations import (
    counts_check,
    counts_well_formed,
    observation_submit,
    privacy_check,
)
from annotation.services.projects import (
    membership_join,
    membership_remove,
    memberships_flag_update,
    project_create,
    project_delete,
    project_rotate_invite,
    project_update,
)
from annotation.services.rounds import PlannedTask, stale_tasks_withdraw, value_round_create
from annotation.services.uploads import (
    corpus_upload,
    import_job_cancel,
    import_job_run,
    project_create_with_corpus,
)
from annotation.services.verification import (
    VerificationWindow,
    verification_check,
    verification_round_create,
)

__all__ = [
    "PlannedTask",
    "VerificationWindow",
    "corpus_import",
    "corpus_upload",
    "import_job_cancel",
    "import_job_run",
    "counts_check",
    "privacy_check",
    "counts_well_formed",
    "membership_join",
    "membership_remove",
    "memberships_flag_update",
    "observation_submit",
    "project_create",
    "project_create_with_corpus",
    "project_delete",
    "project_rotate_invite",
    "project_update",
    "stale_tasks_withdraw",
    "value_round_create",
    "verification_check",
    "verification_round_create",
]
