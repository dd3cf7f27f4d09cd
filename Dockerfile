# The pyhpa controller image: `pyhpa run` with the controller's dependencies only (no simulate extra,
# no test tools). Build it from the repository root and give its name to `pyhpa manifests`:
#
#   docker build -t pyhpa:0.1.0 .
#   pyhpa manifests | kubectl apply -f -                        # the default image name is pyhpa:0.1.0
#
# or push it to a registry the cluster can pull from:
#
#   docker build -t registry.example.com/pyhpa:0.1.0 . && docker push registry.example.com/pyhpa:0.1.0
#   pyhpa manifests --image registry.example.com/pyhpa:0.1.0 | kubectl apply -f -
FROM python:3.12-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY pyhpa ./pyhpa
RUN pip install --no-cache-dir --root-user-action=ignore --prefix=/install .

FROM python:3.12-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
COPY --from=build /install /usr/local
# A numeric non-root user, so that the Deployment's runAsNonRoot can verify it (deploy/deployment.yaml).
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["pyhpa"]
CMD ["run"]
