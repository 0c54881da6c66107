"""A short flow through the Python client openapi-python-client generated from /openapi.json (scripts/test-openapi).

A second generator, written by nobody here, reads the document, and its client talks to a live statusd: every request
is built from the document's models and every answer parsed by them (an answer the document does not declare raises,
as the client is made with raise_on_unexpected_status). The steps: create an app, create users, set a status with an
availability and an expiry, log a backend device in, query statuses (a user's and the backend's), subscribe, block,
list users, subscriptions and blocks, mint a token, kick the device, and clear the app's webhook and allowedOrigins
with an explicit null.

Arguments: the folder the client was generated into (its package is `statusd_client`), statusd's URL and admin key.
"""

import sys

sys.path.insert(0, sys.argv[1])
BASE, ADMIN = sys.argv[2], sys.argv[3]

from statusd_client import AuthenticatedClient  # noqa: E402
from statusd_client.api.admin import create_app, get_app, patch_app_config  # noqa: E402
from statusd_client.api.devices import backend_login, kick  # noqa: E402
from statusd_client.api.operations import (  # noqa: E402
    backend_query, get_user_status, list_subscriptions, set_self_status, subscribe_user_status)
from statusd_client.api.relations import add_blocks, get_blocks  # noqa: E402
from statusd_client.api.users import list_users, mint_token, put_user  # noqa: E402
from statusd_client.models import (  # noqa: E402
    AppConfig, AppConfigPatch, Availability, BackendQueryRequest, BlockLists, CreateAppRequest, CreatedApp,
    InitialAppConfigType0, KickRequest, KickResult, ListUsersStatus, LoginRequest,
    MintedToken, Plan, Platform, QueryUserIdBatch, RelationBatch, SetStatusRequest, StatusQueryResult, SubscribeResult,
    TokenRequest, UserIdBatch, UserIdList, UserPage, UserProfile, UserProfileInput, UserStatus, WebhookType0)
from statusd_client.models.app_view import AppView  # noqa: E402
from statusd_client.models.get_blocks_direction import GetBlocksDirection  # noqa: E402

STEPS = []


def step(name, response, status, model):
    """The answer has the expected status and parses as the document's model for it."""
    if response.status_code != status or not isinstance(response.parsed, model):
        print(f"FAIL: {name}: HTTP {response.status_code}, parsed as {type(response.parsed).__name__}, "
              f"expected {status} {model.__name__}\n  body: {response.content[:500]!r}", file=sys.stderr)
        sys.exit(1)
    STEPS.append(name)
    return response.parsed


def expect(condition, what):
    if not condition:
        print(f"FAIL: {what}", file=sys.stderr)
        sys.exit(1)


admin = AuthenticatedClient(base_url=BASE, token=ADMIN, raise_on_unexpected_status=True)
created = step("create an app", create_app.sync_detailed(client=admin, body=CreateAppRequest(
    app_id="pyflow", config=InitialAppConfigType0(plan=Plan.PREMIUM, status_query=True))), 201, CreatedApp)
app = AuthenticatedClient(base_url=BASE, token=created.api_key, raise_on_unexpected_status=True)
for user in ("alice", "bob", "carol"):
    step(f"create user {user}", put_user.sync_detailed("pyflow", user, client=app, body=UserProfileInput(
        name=user.title(), role="member", tags=["python"])), 200, UserProfile)

status = step("set a status with availability and expiry", set_self_status.sync_detailed("pyflow", "alice", client=app, body=SetStatusRequest(
    custom_status="reviewing", availability=Availability.BUSY, clear_after_seconds=600)), 200, UserStatus)
expect(status.availability == Availability.BUSY and status.custom_status == "reviewing", f"the status set: {status}")
expect(isinstance(status.custom_status_expires_at, int), "a status set with clearAfterSeconds has customStatusExpiresAt")

login = step("log a backend device in", backend_login.sync_detailed("pyflow", "bob", "server-1", client=app, body=LoginRequest(
    platform=Platform.LINUX)), 200, UserStatus)
expect(login.status_type.value == "online" and [device.device_id for device in login.online_devices] == ["server-1"],
       f"bob after the login: {login}")

query = step("query a user's statuses", get_user_status.sync_detailed("pyflow", "alice", client=app, body=QueryUserIdBatch(
    user_ids=["bob", "nobody"])), 200, StatusQueryResult)
expect([s.user_id for s in query.statuses] == ["bob"] and [f.code.value for f in query.failures] == ["USER_NOT_FOUND"],
       f"alice's query: {query}")
backend = step("query statuses as the backend", backend_query.sync_detailed("pyflow", client=app, body=BackendQueryRequest(
    user_ids=["alice", "bob"], detail=True)), 200, StatusQueryResult)
expect(sorted(s.user_id for s in backend.statuses) == ["alice", "bob"], f"the backend query: {backend}")

subscribed = step("subscribe", subscribe_user_status.sync_detailed("pyflow", "alice", client=app, body=UserIdBatch(
    user_ids=["bob"])), 200, SubscribeResult)
expect(subscribed.subscribed == ["bob"], f"the subscription: {subscribed}")
blocks = step("block", add_blocks.sync_detailed("pyflow", "alice", client=app, body=RelationBatch(user_ids=["carol"])), 200, BlockLists)
expect(blocks.by_me == ["carol"], f"alice's blocks: {blocks}")

page = step("list online users", list_users.sync_detailed("pyflow", client=app, status=ListUsersStatus.ONLINE, limit=10), 200, UserPage)
expect([user.user_id for user in page.users] == ["bob"], f"the online users: {page}")
subscriptions = step("list subscriptions", list_subscriptions.sync_detailed("pyflow", "alice", client=app), 200, UserIdList)
expect(subscriptions.user_ids == ["bob"], f"alice's subscriptions: {subscriptions}")
listed = step("list blocks", get_blocks.sync_detailed("pyflow", "carol", client=app, direction=GetBlocksDirection.ME), 200, BlockLists)
expect(listed.me == ["alice"], f"who blocked carol: {listed}")

minted = step("mint a token", mint_token.sync_detailed("pyflow", "alice", client=app, body=TokenRequest(ttl_seconds=300)), 200, MintedToken)
expect(minted.token.count(".") == 2, "a minted token is a JWT")
kicked = step("kick", kick.sync_detailed("pyflow", "bob", client=app, body=KickRequest(device_id="server-1")), 200, KickResult)
expect(kicked.kicked == ["server-1"], f"the kick: {kicked}")

step("set a webhook and allowed origins", patch_app_config.sync_detailed("pyflow", client=admin, body=AppConfigPatch(
    webhook=WebhookType0(url="https://hooks.example.com/statusd", secret="s3cret"),
    allowed_origins=["https://app.example.com"])), 200, AppConfig)
cleared = step("clear them with null", patch_app_config.sync_detailed("pyflow", client=admin, body=AppConfigPatch(
    webhook=None, allowed_origins=None)), 200, AppConfig)
expect(cleared.webhook is None and cleared.allowed_origins is None, f"the config after clearing: {cleared}")
read = step("read the app", get_app.sync_detailed("pyflow", client=admin), 200, AppView)
expect(read.config.webhook is None and read.config.allowed_origins is None, f"the app read back: {read.config}")

print(f"openapi-python-client flow: {len(STEPS)} steps passed ({', '.join(STEPS)})")
