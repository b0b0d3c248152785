# One image for every role of Tally: web, worker, beat (see docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    TALLY_ENV=production \
    TALLY_DATA_DIR=/data \
    STATIC_ROOT=/app/static

RUN useradd --create-home --uid 1000 tally && mkdir -p /data /app && chown tally /data
WORKDIR /app

# Tally as `pip install .` installs it: the packages pyproject.toml lists, with their templates and
# static files, and not devtools/ or tests/ (a checkout's tools; .dockerignore keeps them out of
# the build context too). The sources are needed only to build it.
COPY . /src
RUN pip install --no-cache-dir /src && rm -rf /src
COPY manage.py gunicorn.conf.py ./

# Static files are collected at build time; the throwaway key only lets settings load here.
RUN SECRET_KEY="$(python -c 'import secrets; print(secrets.token_urlsafe(64))')" \
    ALLOWED_HOSTS=build TALLY_DATA_DIR=/tmp/build python manage.py collectstatic --noinput -v0

USER tally
EXPOSE 8000
CMD ["gunicorn", "config.wsgi"]
