"""Retrain now, the retraining schedule, and the retraining status (managers)."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from common.api.base import ManagerView
from common.api.output import iso
from learning import selectors, services, tasks
from learning.api.schemas import RetrainOut, RetrainStatusOut, ScheduleOut
from learning.api.shapes import last_error_out, live_out, run_out
from learning.models import MAX_INTERVAL_MINUTES, RetrainRun


class RetrainView(ManagerView):
    @extend_schema(
        request=None,
        responses={
            200: OpenApiResponse(RetrainOut, description="Nothing new to learn from."),
            202: OpenApiResponse(RetrainOut, description="Queued (or will be, when it can)."),
        },
    )
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
    """`services.retrain_schedule_set` checks the values strictly (a JSON whole number, a JSON
    boolean: no "5" or 1 for true), so they pass through as they came."""

    interval_minutes = serializers.JSONField()
    enabled = serializers.JSONField(required=False, default=True)


class ScheduleWriteSerializer(serializers.Serializer):
    """`ScheduleSerializer` as the schema documents it."""

    interval_minutes = serializers.IntegerField(min_value=1, max_value=MAX_INTERVAL_MINUTES)
    enabled = serializers.BooleanField(required=False, default=True)


class RetrainScheduleView(ManagerView):
    @extend_schema(responses={200: ScheduleOut})
    def get(self, request, project_id):
        return Response(selectors.schedule_of(project_id=self.project.pk))

    @extend_schema(
        request=ScheduleWriteSerializer,
        responses={200: ScheduleOut},
    )
    def put(self, request, project_id):
        data = ScheduleSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.retrain_schedule_set(project=self.project, **data.validated_data)
        return Response(selectors.schedule_of(project_id=self.project.pk))


class RetrainStatusView(ManagerView):
    @extend_schema(responses={200: RetrainStatusOut})
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
                "live": live_out(selectors.live_model_summary(project_id=self.project.pk)),
            }
        )
