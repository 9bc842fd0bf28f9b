"""The generated catalog of `bench/catalog.py`: realistic tool functions over about fifty
products, and the filters and queries a client would send against them.

Each tool is real Python (a signature with typed parameters and a Google-style docstring),
registered as any tool is, so registration, schema building and the search index all do
their normal work; a seed makes every run the same catalog.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

from policies import ToolFilter
from proxy.turn.catalog import Toolset

# namespace: (product, domain tag, entities)
NAMESPACES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "github": ("GitHub", "dev", ("repository", "issue", "pull request", "branch", "release")),
    "gitlab": ("GitLab", "dev", ("merge request", "pipeline", "project", "runner")),
    "jira": ("Jira", "ticketing", ("ticket", "sprint", "epic", "board", "worklog")),
    "linear": ("Linear", "ticketing", ("issue", "project", "cycle", "team")),
    "zendesk": ("Zendesk", "support", ("ticket", "macro", "agent", "satisfaction rating")),
    "slack": ("Slack", "comms", ("channel", "message", "user group", "reminder", "emoji")),
    "gmail": ("Gmail", "comms", ("email", "draft", "label", "filter", "attachment")),
    "calendar": ("Google Calendar", "comms", ("event", "calendar", "attendee", "free slot")),
    "zoom": ("Zoom", "comms", ("meeting", "recording", "webinar", "participant")),
    "twilio": ("Twilio", "comms", ("sms message", "phone call", "phone number")),
    "sendgrid": ("SendGrid", "marketing", ("email template", "contact list", "campaign")),
    "stripe": ("Stripe", "finance", ("customer", "invoice", "subscription", "refund", "payout")),
    "quickbooks": ("QuickBooks", "finance", ("bill", "vendor", "expense", "journal entry")),
    "xero": ("Xero", "finance", ("bank transaction", "payroll run", "tax rate", "credit note")),
    "shopify": ("Shopify", "commerce", ("product", "order", "inventory item", "fulfillment")),
    "salesforce": ("Salesforce", "crm", ("lead", "opportunity", "account", "campaign")),
    "hubspot": ("HubSpot", "crm", ("deal", "contact", "company", "pipeline")),
    "s3": ("Amazon S3", "cloud", ("bucket", "object", "presigned url", "lifecycle rule")),
    "ec2": ("Amazon EC2", "cloud", ("instance", "security group", "volume", "snapshot")),
    "kubernetes": ("Kubernetes", "cloud", ("pod", "deployment", "config map", "node")),
    "docker": ("Docker", "cloud", ("container", "image", "network", "registry tag")),
    "cloudflare": ("Cloudflare", "cloud", ("dns record", "zone", "firewall rule", "worker")),
    "vercel": ("Vercel", "cloud", ("deployment", "domain", "environment variable")),
    "postgres": ("PostgreSQL", "data", ("table", "query", "database index", "role", "backup")),
    "redis": ("Redis", "data", ("key", "stream", "sorted set", "cache entry")),
    "snowflake": ("Snowflake", "data", ("warehouse", "stage", "query result", "share")),
    "bigquery": ("BigQuery", "data", ("dataset", "table", "job", "saved query")),
    "elastic": ("Elasticsearch", "data", ("index", "document", "mapping", "alias")),
    "airtable": ("Airtable", "data", ("base", "record", "view", "field")),
    "datadog": ("Datadog", "observability", ("monitor", "dashboard", "metric", "log")),
    "pagerduty": ("PagerDuty", "observability", ("incident", "on-call schedule", "service")),
    "sentry": ("Sentry", "observability", ("error event", "release", "project", "alert")),
    "grafana": ("Grafana", "observability", ("dashboard", "panel", "alert rule", "datasource")),
    "notion": ("Notion", "docs", ("page", "database", "block", "comment")),
    "confluence": ("Confluence", "docs", ("page", "space", "attachment", "template")),
    "gdrive": ("Google Drive", "files", ("file", "folder", "permission", "shared drive")),
    "dropbox": ("Dropbox", "files", ("file", "folder", "shared link", "file request")),
    "figma": ("Figma", "design", ("design file", "component", "comment", "frame")),
    "asana": ("Asana", "productivity", ("task", "project", "section", "portfolio")),
    "trello": ("Trello", "productivity", ("card", "board", "list", "checklist")),
    "spotify": ("Spotify", "media", ("playlist", "track", "album", "artist")),
    "weather": ("the weather service", "geo", ("forecast", "weather alert", "observation")),
    "maps": ("Google Maps", "geo", ("route", "place", "geocode", "distance matrix")),
    "translate": ("the translation service", "ml", ("text snippet", "document", "glossary")),
    "vision": ("the vision API", "ml", ("image", "image label", "face", "text detection")),
    "workday": ("Workday", "hr", ("employee", "time off request", "position", "payslip")),
    "greenhouse": ("Greenhouse", "hr", ("candidate", "job posting", "interview", "offer")),
    "okta": ("Okta", "security", ("user", "group", "application", "sign-on policy")),
    "vault": ("Vault", "security", ("secret", "lease", "access policy", "token")),
    "mixpanel": ("Mixpanel", "analytics", ("funnel", "cohort", "report", "tracked event")),
}

# verb | tag | required parameters | description ({qual}: the qualifier's words)
VERB_TABLE = """
list|read_only||List {plural} in {product}{qual}. Results are paginated.
get|read_only|id|Get one {entity} from {product} by its id{qual}.
search|read_only|query|Search {plural} in {product} by keywords{qual}. Matches titles and bodies.
create|write|name|Create a new {entity} in {product}{qual}.
update|write|id changes|Update fields of an existing {entity} in {product}{qual}. Fields not \
given are left unchanged.
delete|destructive|id|Delete a {entity} from {product}{qual}. This cannot be undone.
archive|write|id|Archive a {entity} in {product}{qual} so it no longer shows in default views.
restore|write|id|Restore an archived or deleted {entity} in {product}{qual}.
export|read_only||Export {plural} from {product} as CSV or JSON{qual}. Large exports run as \
a background job.
count|read_only||Count the {plural} in {product} that match a filter{qual}.
share|write|id principal|Share a {entity} in {product} with a user or group{qual}.
watch|write|id callback_url|Subscribe to changes of a {entity} in {product}{qual}. A webhook \
is called on every change.
summarize|read_only|id|Summarize recent activity on a {entity} in {product}{qual}.
"""
VERBS: dict[str, tuple[str, tuple[str, ...], str]] = {
    verb: (tag, tuple(required.split()), text)
    for verb, tag, required, text in (line.split("|") for line in VERB_TABLE.strip().splitlines())
}

QUALIFIERS: tuple[tuple[str, str], ...] = (
    ("", ""),
    ("bulk", " in bulk, up to 100 at a time"),
    ("by_owner", " filtered by owner"),
    ("by_date", " within a date range"),
    ("for_team", " for one team or workspace"),
    ("async", " as a background job that returns a job id to poll"),
)

# name: (annotation, default, description); "id" becomes `<entity>_id`
REQUIRED_PARAMS: dict[str, tuple[str, None, str]] = {
    "id": ("str", None, "The {entity}'s id."),
    "query": ("str", None, "Words to look for."),
    "name": ("str", None, "Name or title of the new {entity}."),
    "changes": ("dict[str, str]", None, "Field names and their new values."),
    "principal": ("str", None, "The user or group to share with (email or group name)."),
    "callback_url": ("str", None, "The HTTPS URL called on every change."),
}
OPTIONAL_PARAMS: tuple[tuple[str, str, str | None, str], ...] = (
    ("limit", "int", "50", "Most items to return, from 1 to 500."),
    ("cursor", "str | None", "None", "Page cursor from a previous call."),
    ("order", 'Literal["newest", "oldest"]', '"newest"', "Sort order by creation time."),
    ("include_archived", "bool", "False", "Also return archived items."),
    ("created_after", "str | None", "None", "ISO 8601 date; only items created after it."),
    ("owner", "str | None", "None", "Only items owned by this user."),
    ("labels", "list[str] | None", "None", "Only items with all of these labels."),
    ("dry_run", "bool", "False", "Validate and report what would change, change nothing."),
    ("timeout_seconds", "float", "30.0", "Give up after this many seconds."),
    ("workspace", "str | None", "None", "Workspace or organisation; the default one if omitted."),
    ("fields", "list[str] | None", "None", "Only return these fields."),
    ("format", 'Literal["json", "csv"]', '"json"', "Output format."),
)

STOPWORDS = frozenset(
    re.findall(
        r"\w+",
        "a an the in of by to on for from and or as its it is that this one with at so no be "
        "are all up every only new not given",
    )
)
QUERY_VERBS: dict[str, tuple[str, ...]] = {
    "list": ("list", "show all", "show me the", "what are the"),
    "get": ("get", "fetch", "look up", "details of"),
    "search": ("search", "find", "search for"),
    "create": ("create", "make a new", "add a"),
    "update": ("update", "change", "edit", "modify"),
    "delete": ("delete", "remove", "get rid of"),
    "archive": ("archive", "hide"),
    "restore": ("restore", "undelete", "bring back"),
    "export": ("export", "download", "dump"),
    "count": ("count", "how many"),
    "share": ("share", "give access to"),
    "watch": ("watch", "subscribe to", "notify me about"),
    "summarize": ("summarize", "summary of", "recent activity on"),
}
FILLERS = ("", "", "please", "for me", "the latest", "for the team", "right now", "quickly")
OFF_TOPIC = (
    "quantum entanglement experiment",
    "bake sourdough bread",
    "tell me a joke",
    "translate klingon poetry",
    "nearest coffee",
)


def plural(noun: str) -> str:
    if noun.endswith("y") and noun[-2:-1] not in tuple("aeiou"):
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    return noun + "s"


def snake(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def tool_source(ns: str, verb: str, entity: str, qualifier: str, rng: random.Random) -> str:
    """The source of one generated tool function."""
    product = NAMESPACES[ns][0]
    _, required, template = VERBS[verb]
    noun = plural(entity) if verb in ("list", "search", "export", "count") else entity
    name = "_".join(p for p in (verb, snake(noun), qualifier) if p)
    qual = dict(QUALIFIERS)[qualifier]
    summary = template.format(entity=entity, plural=plural(entity), product=product, qual=qual)
    # (name, annotation, default or None when required, description)
    params = [(f"{snake(entity)}_id" if p == "id" else p, *REQUIRED_PARAMS[p]) for p in required]
    wanted = max(len(params), rng.randint(1, 5))
    params += rng.sample(OPTIONAL_PARAMS, wanted - len(params))  # type: ignore[arg-type]
    signature = ", ".join(
        f"{p}: {a}" + ("" if default is None else f" = {default}") for p, a, default, _ in params
    )
    args = "\n".join(f"        {p}: {doc.format(entity=entity)}" for p, _, _, doc in params)
    return (
        f"def {name}({signature}) -> dict[str, Any]:\n"
        f'    """{summary}\n\n    Args:\n{args}\n    """\n'
        f"    return {{}}\n\n\n"
    )


def generate(count: int, seed: int) -> list[tuple[str, Callable[..., Any], str]]:
    """`count` tool functions as (namespace, function, tag of the verb), namespaces interleaved."""
    rng = random.Random(seed)
    per_ns: dict[str, list[tuple[str, str, str, str]]] = {}
    for ns, (_, _, entities) in NAMESPACES.items():
        combos = [(v, e, q) for v in VERBS for e in entities for q, _ in QUALIFIERS]
        rng.shuffle(combos)
        per_ns[ns] = [(ns, v, e, q) for v, e, q in combos]
    order = [row for rows in zip(*per_ns.values(), strict=False) for row in rows]
    if count > len(order):
        raise SystemExit(f"--tools: at most {len(order)} distinct tools can be generated")
    chosen = order[:count]
    out = []
    for ns in NAMESPACES:
        rows = [r for r in chosen if r[0] == ns]
        source = "".join(tool_source(ns, v, e, q, rng) for _, v, e, q in rows)
        scope: dict[str, Any] = {"Any": Any}
        exec("from typing import Literal\n" + source, scope)
        for row, fn_name in zip(rows, re.findall(r"^def (\w+)\(", source, re.M), strict=True):
            out.append((ns, scope[fn_name], VERBS[row[1]][0]))
    return out


def random_filter(rng: random.Random) -> ToolFilter:
    namespaces = sorted(NAMESPACES)
    domains = sorted({d for _, d, _ in NAMESPACES.values()})
    kind = rng.choice(("namespaces", "tags", "exclude", "mixed"))
    if kind == "namespaces":
        return ToolFilter(namespaces=frozenset(rng.sample(namespaces, rng.randint(1, 10))))
    if kind == "tags":
        return ToolFilter(tags=frozenset(rng.sample(domains, rng.randint(1, 4))))
    if kind == "exclude":
        excluded = [*rng.sample(domains, rng.randint(1, 6)), "destructive"]
        return ToolFilter(exclude_tags=frozenset(excluded))
    return ToolFilter(
        namespaces=frozenset(rng.sample(namespaces, rng.randint(5, 25))),
        exclude_tags=frozenset(rng.sample(("destructive", "write"), rng.randint(1, 2))),
    )


def realistic_queries(count: int, rng: random.Random) -> list[tuple[str, int]]:
    """Task-like queries: a verb phrase, an entity, often the product; a few off topic."""
    out = []
    for i in range(count):
        if i % 25 == 0:
            out.append((OFF_TOPIC[(i // 25) % len(OFF_TOPIC)], 5))
            continue
        ns = rng.choice(list(NAMESPACES))
        product, _, entities = NAMESPACES[ns]
        verb = rng.choice(list(QUERY_VERBS))
        entity = rng.choice(entities)
        noun = plural(entity) if verb in ("list", "search", "export", "count") else entity
        words = [rng.choice(QUERY_VERBS[verb]), noun]
        if rng.random() < 0.6:
            words.append(f"in {product}" if rng.random() < 0.5 else f"on {ns}")
        words.append(rng.choice(FILLERS))
        out.append((" ".join(w for w in words if w), 10 if i % 10 == 0 else 5))
    return out


def quality_queries(toolset: Toolset, count: int, rng: random.Random) -> list[tuple[str, str]]:
    """(query of 4 description words, wire name of the tool they come from)."""
    deferred = [(n, t) for n, t in toolset.by_wire_name.items() if t.metadata.defer]
    out = []
    for wire, tool in rng.sample(deferred, min(count, len(deferred))):
        words = {w for w in re.findall(r"[a-z]+", tool.description.lower()) if w not in STOPWORDS}
        picked = rng.sample(sorted(words), min(4, len(words)))
        out.append((" ".join(picked), wire))
    return out
