"""Liveness, readiness and model information: always open, never behind API keys."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from api.schemas import ErrorResponse, Health, ModelInfo, Readiness
from api.serving import ModelState, ServingDep

router = APIRouter(tags=["service"])


@router.get("/health", response_model=Health)
async def health(request: Request) -> Health:
    """Liveness: 200 while the process serves HTTP, also while the model is still loading."""
    state: ModelState = request.app.state.model
    s = request.app.state.settings
    version = state.serving.provenance.version if state.serving is not None else None
    return Health(
        status="ok",
        model_loaded=state.serving is not None,
        model_version=version,
        device=s.device,
        workers=s.workers,
        torch_threads=s.torch_threads,
    )


@router.get(
    "/health/ready",
    response_model=Readiness,
    responses={503: {"model": Readiness, "description": "the model is still loading"}},
)
async def ready(request: Request):
    """Readiness: 200 once the model is loaded and warmed up, 503 before (route traffic on this)."""
    state: ModelState = request.app.state.model
    if state.serving is None:
        body = Readiness(ready=False, detail="the model is loading")
        return JSONResponse(body.model_dump(), status_code=503, headers={"Retry-After": "1"})
    return Readiness(
        ready=True, model_version=state.serving.provenance.version, detail="the model is loaded and warmed up"
    )


@router.get("/v1/model", response_model=ModelInfo, responses={503: {"model": ErrorResponse}})
async def model_info(serving: ServingDep) -> ModelInfo:
    """Which model is serving: version, licence and training data (from the model card), character set, CER."""
    r, p = serving.recognizer, serving.provenance
    meta = r.metadata
    return ModelInfo(
        model_version=p.version,
        checkpoint=r.path.name,
        sha256=p.sha256,
        library_version=p.library_version,
        licence=p.licence,
        training_data=p.training_data,
        model_card=p.model_card,
        kind=r.config.kind,
        input_height=r.height,
        num_parameters=sum(t.numel() for t in r.model.parameters()),
        charset=r.codec.charset,
        languages=list(r.languages),
        language=r.language_for("beam", None),  # TEXT_RECOGNIZER_LANGUAGE was checked at startup
        num_classes=r.codec.num_classes,
        loss=r.loss,
        val_cer=meta.get("val_cer"),
        epoch=meta.get("epoch"),
        step=meta.get("step"),
        config=r.config.to_dict(),
    )

