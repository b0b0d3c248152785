"""Tag posted text with the current model (any member); export the corpus tagged (managers)."""

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from common.api.base import ManagerView, ProjectView
from common.exceptions import InvalidInput, PayloadTooLarge
from learning import adapter, selectors
from learning.exceptions import NoModelYet

MAX_TEXT_CHARS = 10_000
MAX_TOKENS = 1_000
ALTERNATIVES = 3
EXPORT_BATCH = 500


class PredictSerializer(serializers.Serializer):
    text = serializers.CharField(trim_whitespace=False, allow_blank=True)


def _current_or_409(project_id: int):
    version = selectors.current_version(project_id=project_id)
    if version is None:
        raise NoModelYet("This project has no model yet; it is trained once annotations arrive.")
    return version


class PredictView(ProjectView):
    @extend_schema(request=PredictSerializer, responses={200: OpenApiTypes.OBJECT})
    def post(self, request, project_id):
        data = PredictSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        text = data.validated_data["text"]
        if len(text) > MAX_TEXT_CHARS:
            raise PayloadTooLarge(f"The text is longer than {MAX_TEXT_CHARS} characters.")
        tokens = text.split()
        if not tokens:
            raise InvalidInput("Nothing to tag.", fields={"text": ["Give some words to tag."]})
        if len(tokens) > MAX_TOKENS:
            raise PayloadTooLarge(f"The text has more than {MAX_TOKENS} words.")
        version = _current_or_409(self.project.pk)
        tags, probabilities, probs = selectors.predict_tokens(version=version, tokens=tokens)
        tagset = selectors.tagger_of(version=version).tagset_
        top = (-probs).argsort(axis=1)[:, :ALTERNATIVES]
        return Response(
            {
                "version": version.number,
                "tokens": tokens,
                "tags": tags,
                "probabilities": [round(p, 4) for p in probabilities],
                "alternatives": [
                    [{"tag": tagset[k], "probability": round(float(probs[i, k]), 4)} for k in row]
                    for i, row in enumerate(top)
                ],
            }
        )


def _conllu_lines(*, project_id: int, version):
    tagger = selectors.tagger_of(version=version)
    tagset = tagger.tagset_
    batch: list = []

    def flush():
        probs = tagger.token_proba([tokens for _, _, tokens, _ in batch])
        position, out = 0, []
        for sentence_id, split, tokens, gold in batch:
            out.append(
                f"# sent_id = {sentence_id}\n# split = {split}\n"
                f"# model_version = {version.number}\n# text = {' '.join(tokens)}\n"
            )
            for j, token in enumerate(tokens):
                row = probs[position + j]
                k = int(row.argmax())
                misc = f"Prob={row[k]:.3f}" + (f"|Gold={tagset[gold[j]]}" if gold else "")
                out.append(f"{j + 1}\t{token}\t_\t{tagset[k]}\t_\t_\t_\t_\t_\t{misc}\n")
            out.append("\n")
            position += len(tokens)
        batch.clear()
        return "".join(out)

    for row in adapter.corpus_sentences(project_id=project_id):
        batch.append(row)
        if len(batch) >= EXPORT_BATCH:
            yield flush()
    if batch:
        yield flush()


class PredictionsExportView(ManagerView):
    @extend_schema(responses={(200, "text/plain"): OpenApiTypes.BINARY})
    def get(self, request, project_id):
        version = _current_or_409(self.project.pk)
        response = StreamingHttpResponse(
            _conllu_lines(project_id=self.project.pk, version=version),
            content_type="text/plain; charset=utf-8",
        )
        response["Content-Disposition"] = (
            f'attachment; filename="project-{self.project.pk}-predictions.conllu"'
        )
        response["X-Content-Type-Options"] = "nosniff"
        return response
