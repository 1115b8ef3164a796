"""Subscriptions over HTTP: GET/POST /v1/subscriptions, GET/PUT/PATCH/DELETE /v1/subscriptions/{id}.

The same store port as ``firstfault subscribe|unsubscribe|subscriptions`` (store/ports.py) and the same model
(schemas/subscription.py), so a subscription made here routes exactly like one made from the terminal.
Reads are open; writes need the bearer token. Webhooks go only to https hosts an admin allows
(notifiers/webhook_policy.py, FIRSTFAULT_WEBHOOK_ALLOW_HOSTS): any other is a 422 naming the target. A PagerDuty
routing key is a credential and a webhook URL often carries one (a path token, ``?key=``, ``user:pass@``): answers
show only their end. PUT replaces everything, so it needs the targets in full; PATCH changes only the fields it
names and keeps the stored targets when it names none.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Path, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from api.history import answers, clock_of
from api.ingest import bearer_guard
from notifiers.subscriptions import new_id
from notifiers.webhook_policy import WebhookPolicy
from schemas.subscription import Match, QuietHours, Subscription, Target, TargetKind
from store.ports import NotifyStore, NotifyTx, NotStorable, StoredSubscription

SubscriptionId = Annotated[str, Path(max_length=64, description="sub-… as returned on creation")]


class SubscriptionIn(BaseModel):
    """A new subscription, or the whole of one for PUT. Targets in full: routing keys and URLs as they are."""

    model_config = ConfigDict(extra="forbid")

    team: str = Field(min_length=1, max_length=256)
    name: str = Field(default="", max_length=256)
    match: Match = Field(default_factory=Match)
    targets: list[Target] = Field(min_length=1)
    fallback: bool = False
    mute_until: datetime | None = Field(default=None, description="with a time zone: 2026-12-02T09:00:00Z")
    quiet_hours: QuietHours | None = None


class SubscriptionPatch(BaseModel):
    """The fields to change; the others keep their stored values. ``null`` clears mute_until or quiet_hours."""

    model_config = ConfigDict(extra="forbid")

    team: str | None = Field(default=None, min_length=1, max_length=256)
    name: str | None = Field(default=None, max_length=256)
    match: Match | None = None
    targets: list[Target] | None = Field(default=None, min_length=1)
    fallback: bool | None = None
    mute_until: datetime | None = None
    quiet_hours: QuietHours | None = None


class TargetOut(BaseModel):
    kind: TargetKind
    address: str = Field(description="a Slack channel in full; a routing key or webhook URL shown by its end")
    masked: bool


class SubscriptionOut(BaseModel):
    id: str
    team: str
    name: str
    match: Match
    targets: list[TargetOut]
    fallback: bool
    mute_until: datetime | None
    quiet_hours: QuietHours | None
    created_at: datetime | None


def masked_address(target: Target) -> str:
    """What may be shown of a destination (Target.shown_address): the CLI and the API show the same."""
    return target.shown_address()


def out(sub: Subscription) -> SubscriptionOut:
    return SubscriptionOut(
        id=sub.id, team=sub.team, name=sub.name, match=sub.match, fallback=sub.fallback, mute_until=sub.mute_until,
        quiet_hours=sub.quiet_hours, created_at=sub.created_at,
        targets=[TargetOut(kind=t.kind, address=masked_address(t), masked=masked_address(t) != t.address)
                 for t in sub.targets])


class NoEchoRoute(APIRoute):
    """422 answers without the ``input`` FastAPI echoes by default: a routing key one character short is still a
    credential, and must not come back in an answer (or a proxy's log of it)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestValidationError as exc:
                raise RequestValidationError([{k: v for k, v in e.items() if k not in ("input", "ctx")}
                                              for e in exc.errors()]) from None
        return route


def _invalid(exc: ValidationError) -> RequestValidationError:
    """A merged PATCH that no longer validates, answered like FastAPI answers a bad body (422, each problem)."""
    return RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in exc.errors(
        include_url=False, include_context=False, include_input=False)])


@contextmanager
def stored(store: NotifyStore) -> Iterator[NotifyTx]:
    """A store transaction whose refusals are the caller's: a value the database cannot hold (a NUL byte in
    PostgreSQL text, a name over its column) is a 422, not a 500."""
    with answers():
        try:
            with store.notify() as tx:
                yield tx
        except NotStorable as exc:
            raise RequestValidationError([{"loc": ("body",), "msg": f"not storable: {exc}",
                                           "type": "value_error"}]) from exc


def _row(tx: NotifyTx, subscription_id: str) -> StoredSubscription:
    """The stored subscription, locked until the end of the transaction (two PATCHes never lose one's change)."""
    found = tx.subscription(subscription_id, lock=True)
    if found is None:
        raise HTTPException(status_code=404, detail=f"no subscription {subscription_id!r}")
    return found


def _parsed(found: StoredSubscription) -> Subscription:
    if found.subscription is None:  # edited by hand or an older schema: routing skips it too
        raise HTTPException(status_code=409, detail=f"subscription {found.id!r} is stored invalid "
                                                    f"({found.problem}): PUT a valid one or DELETE it")
    return found.subscription


def _replace(tx: NotifyTx, sub: Subscription, now: datetime) -> Subscription:
    tx.replace_subscription(sub, now)
    return sub


NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"description": "no such subscription"}}
INVALID: dict[int | str, dict[str, Any]] = {409: {"description": "stored but no longer valid: PUT or DELETE it"}}
WRITE: dict[int | str, dict[str, Any]] = {
    400: {"description": "a body that cannot be read (not UTF-8)"},
    401: {"description": "missing or wrong bearer token"},
    503: {"description": "the database is unreachable; retry after Retry-After seconds"},
}


def _allowed(sub: Subscription, policy: WebhookPolicy) -> Subscription:
    """Webhooks only where the admin allows them (notifiers/webhook_policy.py): a 422 naming the target."""
    problems = [{"loc": ("body", "targets", i, "address"), "msg": refused, "type": "value_error"}
                for i, t in enumerate(sub.targets) if t.kind == "webhook"
                and (refused := policy.problem(t.address)) is not None]
    if problems:
        raise RequestValidationError(problems)
    return sub


def subscriptions_router(store: NotifyStore, token: str | None, policy: WebhookPolicy | None = None) -> APIRouter:
    policy = policy or WebhookPolicy()
    router = APIRouter(prefix="/v1/subscriptions", tags=["subscriptions"], route_class=NoEchoRoute)
    guarded = [Depends(bearer_guard(token))]

    @router.get("", response_model=list[SubscriptionOut], responses={503: WRITE[503]})
    def list_subscriptions() -> list[SubscriptionOut]:
        with stored(store) as tx:
            return [out(x) for x in tx.subscriptions()]

    @router.post("", status_code=201, response_model=SubscriptionOut, dependencies=guarded, responses=WRITE)
    def create_subscription(body: SubscriptionIn, response: Response, request: Request) -> SubscriptionOut:
        now = clock_of(request)
        try:
            sub = Subscription(id=new_id(), created_at=now, **body.model_dump())
        except ValidationError as exc:
            raise _invalid(exc) from exc
        _allowed(sub, policy)
        with stored(store) as tx:
            tx.add_subscription(sub, now)
        response.headers["Location"] = f"/v1/subscriptions/{sub.id}"
        return out(sub)

    @router.get("/{subscription_id}", response_model=SubscriptionOut,
                responses={**NOT_FOUND, **INVALID})
    def get_subscription(subscription_id: SubscriptionId) -> SubscriptionOut:
        with stored(store) as tx:
            return out(_parsed(_row(tx, subscription_id)))

    @router.put("/{subscription_id}", response_model=SubscriptionOut, dependencies=guarded,
                responses={**WRITE, **NOT_FOUND})
    def replace_subscription(subscription_id: SubscriptionId, body: SubscriptionIn,
                             request: Request) -> SubscriptionOut:
        with stored(store) as tx:
            created = _row(tx, subscription_id).created_at  # a PUT may replace a stored-invalid one
            try:
                sub = Subscription(id=subscription_id, created_at=created.replace(tzinfo=created.tzinfo or UTC),
                                   **body.model_dump())
            except ValidationError as exc:
                raise _invalid(exc) from exc
            _allowed(sub, policy)
            return out(_replace(tx, sub, clock_of(request)))

    @router.patch("/{subscription_id}", response_model=SubscriptionOut, dependencies=guarded,
                  responses={**WRITE, **NOT_FOUND, **INVALID})
    def update_subscription(subscription_id: SubscriptionId, body: SubscriptionPatch,
                            request: Request) -> SubscriptionOut:
        with stored(store) as tx:
            current = _parsed(_row(tx, subscription_id)).model_dump()
            try:  # explicit nulls clear mute_until and quiet_hours; on a required field they are refused here
                sub = Subscription.model_validate({**current, **body.model_dump(exclude_unset=True)})
            except ValidationError as exc:
                raise _invalid(exc) from exc
            if body.targets is not None:  # stored targets are checked again at delivery
                _allowed(sub, policy)
            return out(_replace(tx, sub, clock_of(request)))

    @router.delete("/{subscription_id}", status_code=204, dependencies=guarded, responses={**WRITE, **NOT_FOUND})
    def delete_subscription(subscription_id: SubscriptionId) -> Response:
        with stored(store) as tx:
            if not tx.remove_subscription(subscription_id):
                raise HTTPException(status_code=404, detail=f"no subscription {subscription_id!r}")
        return Response(status_code=204)

    return router
