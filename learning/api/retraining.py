"""Retrain now, the retraining schedule, and the retraining status (managers)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from common.api.base import ManagerView
from common.api.output import iso
from learning import selectors, services, tasks
from learning.api.shapes import last_error_out, run_out
from learning.models import RetrainRun


class RetrainView(ManagerView):
    @extend_schema(request=None, responses={202: OpenApiTypes.OBJECT, 200: OpenApiTypes.OBJECT})
    def post(self, request, project_id):
        if not services.retrain_request_check(project=self.project):
            return Response(
                {
                    "queued": False,
                    "due": False,
                    "message": "The current model already includes every observation.",
                }
            )
        if tasks.retrain_enqueue(project_id=self.project.pk, trigger=RetrainRun.Trigger.MANUAL):
            return Response({"queued": True, "due": True}, status=status.HTTP_202_ACCEPTED)
        return Response(
            {
                "queued": False,
                "due": True,
                "message": "The job queue is unreachable right now; the project will be "
                "retrained automatically once it is back.",
            },
            status=status.HTTP_202_ACCEPTED,
        )


class ScheduleSerializer(serializers.Serializer):
    interval_minutes = serializers.JSONField()
    enabled = serializers.JSONField(required=False, default=True)


class RetrainScheduleView(ManagerView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request, project_id):
        return Response(selectors.schedule_of(project_id=self.project.pk))

    @extend_schema(request=ScheduleSerializer, responses={200: OpenApiTypes.OBJECT})
    def put(self, request, project_id):
        data = ScheduleSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.retrain_schedule_set(project=self.project, **data.validated_data)
        return Response(selectors.schedule_of(project_id=self.project.pk))


class RetrainStatusView(ManagerView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request, project_id):
        state = selectors.retrain_status(project_id=self.project.pk)
        runs = [run_out(run, shown) for run, shown in state["runs"]]
        return Response(
            {
                "running": state["locked_until"] is not None,
                "locked_until": iso(state["locked_until"]),
                "due": state["due"],
                "pending_observations": state["pending_observations"],
                "current_version": state["current_version"],
                "last_run": runs[0] if runs else None,
                "last_error": last_error_out(state["last_failed"]),
                "recent_runs": runs,
            }
        )
