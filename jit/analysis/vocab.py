"""The analysis vocabulary: categories, capabilities and domains, with their definitions.

One vocabulary serves every analyzer. The definitions below are the rubric the
LLM prompt hands to the model (``jit/analysis/llm_analyzer.py``), and the lexicons are
what the offline analyzer (``jit/analysis/analyze.py``) matches against tool text, so
both produce labels of the same meaning. ``docs/analyzer.md`` lists them.

Lexicon syntax: space-separated keywords; ``word!`` is a strong cue (specific
to the label: ``git!``), a plain word is a weak one (``commit``); ``a_b`` is a
two-word phrase (``pull_request``). Keywords are stemmed the same way as tool
text (:func:`jit.text.stem`), so ``files`` and ``file`` match alike. Adding a keyword is safe; the
lexicons must describe the label, never a particular tool.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import pairwise

from ..text import CJK, stem

__all__ = [
    "CAPABILITIES",
    "CAPABILITY_DEFINITIONS",
    "CAPABILITY_VERBS",
    "CAPABILITY_VERB_PHRASES",
    "CATEGORIES",
    "CATEGORY_DEFINITIONS",
    "CATEGORY_LEXICON",
    "CATEGORY_NOUNS",
    "CATEGORY_RELATED",
    "CJK_TERMS",
    "DOMAINS",
    "DOMAIN_DEFINITIONS",
    "DOMAIN_LEXICON",
    "STOPWORDS",
    "TASK_STEP_VERBS",
    "CODE_CHANGE_WORDS",
    "CODE_EDIT_WORDS",
    "Evidence",
    "cjk_terms",
    "name_tokens",
    "normalize_capability",
    "normalize_category",
    "normalize_domain",
    "with_bigrams",
]

# --------------------------------------------------------------------------- categories

#: What a tool is about. Ordered roughly from developer tooling to everything else.
CATEGORY_DEFINITIONS: dict[str, str] = {
    "filesystem": "local files and directories: read, write, list, move, edit or search files on disk",
    "shell": "run shell commands, scripts, processes and terminal sessions on a machine",
    "code_analysis": "source code and developer tooling: read, lint, analyze, refactor or run code; "
    "packages, libraries, components and language servers",
    "vcs": "version control and code hosting: git, commits, branches, diffs, GitHub/GitLab "
    "repositories, pull requests",
    "web": "fetch or scrape web pages, URLs and HTTP APIs; websites, domains, DNS and WHOIS",
    "search": "search engines and lookups: web search, searching a catalog, index or collection by query",
    "browser": "drive a web browser: navigate, click, type, read the page, take screenshots "
    "(Playwright, Puppeteer, Selenium)",
    "database": "databases and queries: SQL and NoSQL, tables, collections, records, vector stores",
    "data": "structured data and datasets: CSV, JSON, spreadsheets, data conversion, statistics, open data portals",
    "docs": "documents and documentation: library and API docs, wikis and encyclopedias, Word/PDF/Markdown "
    "files, presentations",
    "communication": "email, chat and messaging: Slack, Discord, Telegram, SMS, notifications, feedback",
    "social": "social media and communities: Twitter/X, Reddit, YouTube, Hacker News, posts, comments, followers",
    "news": "news and trends: headlines, articles, trending topics, RSS feeds",
    "project_management": "tasks, issues, tickets, to-dos, projects, workflows, calendars and scheduling "
    "(Jira, Linear, Trello)",
    "cloud": "cloud infrastructure and deployment: AWS/GCP/Azure, containers, Docker, Kubernetes, "
    "serverless, CI/CD",
    "monitoring": "logs, metrics, traces, alerts, uptime and system status",
    "security": "security and identity: vulnerabilities, scanning, authentication, secrets, certificates, "
    "threat intelligence",
    "memory": "persistent agent memory: knowledge graphs, entities and relations, saved notes and "
    "context kept across sessions",
    "reasoning": "structured thinking aids for the model: step-by-step thinking, planning, reflection, "
    "decision frameworks",
    "ai": "calls to AI models and services: LLM completions, embeddings, agents, model hubs",
    "media": "images, audio and video: generate, edit, convert, transcribe, extract or view",
    "visualization": "charts, graphs, diagrams and drawings: render data or processes visually",
    "finance": "markets and money: stocks, crypto, exchange rates, company financials, payments, accounting",
    "location": "geography and travel: maps, geocoding, places, routes, weather, transport, flights, hotels",
    "academic": "scholarly and scientific sources: papers, arXiv, PubMed, citations, clinical trials, "
    "biomedical and scientific data",
    "entertainment": "games, sports, movies, music, art, fortune telling, trivia and hobbies",
    "commerce": "shopping and business operations: products, orders, stores, CRM, marketing, ads",
    "utility": "general helpers: time and dates, calculators, unit conversion, random numbers, "
    "text utilities, QR codes",
}
CATEGORIES: tuple[str, ...] = tuple(CATEGORY_DEFINITIONS)

# --------------------------------------------------------------------------- capabilities

#: What a tool does. A tool usually has one to three.
CAPABILITY_DEFINITIONS: dict[str, str] = {
    "/read": "returns existing content or details of a known item (get, read, fetch, show, describe, download)",
    "/list": "enumerates the items of a collection (list, browse, all ...)",
    "/search": "finds items matching a query or filter (search, find, query, look up)",
    "/write": "creates or modifies persistent content or state as directed (create, add, write, update, "
    "set, edit, format, upload, save, move, commit)",
    "/delete": "removes or destroys content or state (delete, remove, drop, clear, purge, prune, wipe)",
    "/execute": "runs code, commands, jobs, workflows or operations with side effects (run, exec, start, "
    "stop, deploy, install)",
    "/transform": "converts or reformats given input into another form (convert, parse, translate, clean, "
    "resize, compress, encode)",
    "/analyze": "derives insight from input or data (analyze, evaluate, validate, compare, calculate, "
    "summarize, check)",
    "/generate": "produces new content from a specification (generate charts, images, text, code, "
    "random values, plans)",
    "/send": "delivers something to people or external systems (send a message or email, post, publish, notify)",
    "/navigate": "drives an interactive session (navigate, click, type, scroll, hover, open or close "
    "pages and windows)",
    "/monitor": "observes state over time (watch, subscribe, track, status and health checks, tail logs)",
}
CAPABILITIES: tuple[str, ...] = tuple(CAPABILITY_DEFINITIONS)

# --------------------------------------------------------------------------- domains

#: The technical ecosystem a tool is specific to; ``/general`` when it is not.
DOMAIN_DEFINITIONS: dict[str, str] = {
    "/general": "not specific to a programming language or technical ecosystem",
    "/python": "Python code, packages (pip, PyPI), frameworks (Django, Flask, pandas)",
    "/javascript": "JavaScript and Node.js code, npm packages",
    "/typescript": "TypeScript code and tooling",
    "/go": "Go (golang) code and modules",
    "/rust": "Rust code, cargo and crates",
    "/java": "Java and JVM code, Maven, Gradle",
    "/csharp": "C# and .NET code, NuGet",
    "/cpp": "C and C++ code, compilers, CMake",
    "/ruby": "Ruby code and gems, Rails",
    "/php": "PHP code, Composer, Laravel, WordPress",
    "/swift": "Swift, iOS and macOS development",
    "/kotlin": "Kotlin and Android development",
    "/sql": "SQL queries and relational schemas",
    "/shell": "shell scripting: bash, zsh, PowerShell",
    "/web": "web front-end: HTML, CSS, React, Vue, UI components",
    "/devops": "infrastructure and operations: Docker, Kubernetes, Terraform, CI/CD",
    "/data_science": "data analysis and machine learning: notebooks, dataframes, models",
}
DOMAINS: tuple[str, ...] = tuple(DOMAIN_DEFINITIONS)

# --------------------------------------------------------------------------- lexicons

_CATEGORY_WORDS: dict[str, str] = {
    "filesystem": "file! filesystem! file_system! directory! directories! folder! path dir! mkdir! glob! "
    "filename! filepath! rename move copy tree disk local_file read_file write_file edit_file text_file "
    "workspace line content",
    "shell": "shell! command! terminal! bash! zsh! powershell! process! subprocess! exec! cli! stdout! stderr! "
    "script pid kill console execute_command run_command",
    "code_analysis": "code! source_code! lint! linter! refactor! compile! compiler! debug! debugger! ast! symbol "
    "function class method snippet syntax npm! pypi! package! library! dependency! dependencies! sdk! api_reference "
    "component! typescript javascript python programming developer! codebase! stack_trace test! "
    "unit_test coverage changelog! release version implementation",
    "vcs": "git! github! gitlab! bitbucket! commit! branch! pull_request! merge_request! diff! repository! repo! "
    "checkout! rebase! stash! blame! clone! fork! tag merge push pull issue_comment",
    "web": "url! http! https! html! webpage! web_page! website! scrape! scraper! crawl! crawler! fetch! markdown "
    "domain! dns! whois! web! http_request! api_endpoint link! sitemap! headers page online internet",
    "search": "search! query! find lookup! look_up search_engine! bing! google duckduckgo! brave! searxng! "
    "tavily! exa! serp! keyword! result results discover",
    "browser": "browser! playwright! puppeteer! selenium! click! hover! screenshot! navigate! tab! scroll! "
    "selector! element! dom! viewport! chrome! firefox! webdriver! iframe! visible_text page",
    "database": "database! sql! sqlite! postgres! postgresql! mysql! mongodb! mongo! redis! supabase! table "
    "schema! column! row! query collection! record index! vector_store! neo4j! cypher! bigquery! snowflake! "
    "dynamodb! firestore! elasticsearch!",
    "data": "data! dataset! csv! json! excel! spreadsheet! xlsx! sheet! dataframe! statistic! statistics! "
    "analytics! metric convert parse record open_data! table format structure",
    "docs": "document! documentation! docs! doc! wiki! wikipedia! pdf! docx! word! markdown note article "
    "paragraph! heading! presentation! slide! pptx! powerpoint! template manual guide readme! library_docs! "
    "reference page text",
    "communication": "email! mail! gmail! slack! discord! telegram! whatsapp! sms! message! chat! channel! "
    "notification! notify! inbox! send reply! feedback! contact",
    "social": "twitter! tweet! reddit! subreddit! youtube! instagram! facebook! "
    "linkedin! tiktok! mastodon! bluesky! social! post comment! comments follower! story like",
    "news": "news! headline! headlines! trending! trend! rss! feed! hot! breaking article",
    "project_management": "task! tasks! todo! issue! ticket jira! linear! trello! asana! notion! project! "
    "sprint! milestone! kanban! calendar! event! meeting! schedule! reminder! workflow plan planning",
    "cloud": "aws! gcp! azure! cloud! docker! container! kubernetes! k8s! pod! helm! terraform! deploy! "
    "deployment! serverless! lambda! vercel! netlify! cloudflare! ci! pipeline! instance! cluster! "
    "s3! bucket! docker_image!",
    "monitoring": "log! logs! metric! metrics! trace! tracing! alert! alerts! uptime! monitor! monitoring! "
    "grafana! prometheus! sentry! datadog! health! status incident!",
    "security": "security! vulnerability! vulnerabilities! cve! scan! scanner! auth! authentication! "
    "oauth! token secret! secrets! password! certificate! ssl! tls! encrypt! decrypt! threat! malware! "
    "firewall! permission",
    "memory": "memory! memories! knowledge_graph! entity! entities! relation observation! "
    "remember! recall! persistent! context note",
    "reasoning": "think! thinking! thought! thoughts! sequential_thinking! reasoning! reflect! reflection! "
    "brainstorm! plan decision! problem_solving! hypothesis! mental_model! step",
    "ai": "llm! gpt! openai! claude! anthropic! gemini! model! prompt! completion embedding! embeddings! "
    "agent! inference! huggingface! ai! chatbot! rag!",
    "media": "image! images! photo! picture! video! audio! sound! music speech! transcribe! transcription! "
    "tts! voice! thumbnail! resize! crop! ocr! mp3! mp4! png! jpg! jpeg! svg gif! camera",
    "visualization": "chart! charts! graph! plot! diagram! visualize! visualization! pie! bar_chart! "
    "line_chart! histogram! flowchart! flow_diagram! mermaid! canvas! draw! drawing! mind_map! sankey! "
    "heatmap! scatter! treemap! radar! funnel! word_cloud! dashboard",
    "finance": "stock! stocks! ticker! finance! financial! crypto! cryptocurrency! bitcoin! ethereum! coin! "
    "token market! price! trading! trade! exchange_rate! currency! forex! dividend! earning! earnings! "
    "portfolio! invest! investor! fund! bank! payment! invoice! accounting! nasdaq! "
    "defi! wallet! blockchain! web3!",
    "location": "map! maps! geocode! geocoding! geographic! latitude! longitude! coordinate! coordinates! "
    "place! places! address! route! direction! directions! distance! weather! forecast! temperature! "
    "travel! flight! flights! hotel! hotels! train! station! airport! transit! osm! openstreetmap! "
    "city! country! region location! nearby! ticket",
    "academic": "paper! papers! arxiv! pubmed! scholar! citation! citations! journal! research! "
    "academic! scientific! science! clinical! trial! gene! genetic! protein! biomedical! "
    "medical! disease! drug! doi! abstract author",
    "entertainment": "game! games! gaming! player! sport! sports! movie! movies! film! music! song! "
    "anime! manga! match! team! league! tarot! horoscope! astrology! fortune! "
    "joke! trivia! cook! cooking! food! dish! meal! art! chess! recipe!",
    "commerce": "product! products! order shop! shopping! store cart! ecommerce! e_commerce! "
    "shopify! amazon! customer! customers! crm! salesforce! hubspot! marketing! ad! ads! campaign! "
    "coupon! sale! sales! lead! leads! inventory!",
    "utility": "time! timezone! date! datetime! clock! calculator! calculate! math! arithmetic! unit! "
    "convert_unit random! uuid! qr! qrcode! hash! base64! uppercase! lowercase! counter! timestamp!",
}

#: Tokens too generic to count as evidence for any category.
STOPWORDS = frozenset(
    "a an the and or of to in on for with by from at as is are be it its this that these those your you "
    "can will may must should use used using also into via about over any all each more most other such "
    "not no if when then than which who what how new get set list tool tools mcp server servers based "
    "specific given provide provides return returns optional option default name id ids value values type "
    "string number integer boolean object array true false null".split()
)


def _compile_lexicon(words: Mapping[str, str]) -> dict[str, dict[str, float]]:
    """``{keyword stem: {label: weight}}`` from the ``word!`` syntax: strong 2.0, weak 1.0."""
    out: dict[str, dict[str, float]] = {}
    for label, text in words.items():
        for raw in text.split():
            strong = raw.endswith("!")
            key = "_".join(stem(p) for p in raw.rstrip("!").split("_"))
            weight = 2.0 if strong else 1.0
            slot = out.setdefault(key, {})
            slot[label] = max(slot.get(label, 0.0), weight)
    return out


CATEGORY_LEXICON: dict[str, dict[str, float]] = _compile_lexicon(_CATEGORY_WORDS)

# Verbs (and a few nouns that imply an action) -> capability. Matched on stems.
_CAPABILITY_WORDS: dict[str, str] = {
    "/read": "get! read! fetch! retrieve! reader! fetcher! downloader! viewer! show! view! describe! download! "
    "load! open inspect info detail "
    "details! getter! obtain! access! extract display! print! cat! peek! export! content",
    "/list": "list! ls! browse! enumerate! all lists",
    "/search": "search! searcher! finder! find! query! lookup! look_up! grep! locate! discover! explore filter! "
    "match! seek "
    "resolve",
    "/write": "create! creator! add! write! writer! editor! uploader! update! set! edit! modify! insert! append! "
    "save! upload! put! patch! "
    "rename! move! copy! commit! push! register! record! replace! apply! store! make! new mkdir! format! "
    "style! merge! assign! mark! approve! complete! configure! enable! disable! prepend! import! tag "
    "init! initialize! change manage",
    "/delete": "delete! remove! drop! clear! purge! destroy! erase! unlink! uninstall! rm! revoke! cancel! "
    "prune! wipe! trash! expunge! discard! flush! evict! truncate cleanup clean_up reset archive",
    "/execute": "run! exec! execute! invoke! start! stop! launch! restart! deploy! install! build! trigger! "
    "call! spawn! kill! terminate! eval! evaluate_code shell! command! job! pause! resume! scale!",
    "/transform": "convert! converter! transform! transformer! parse! parser! cleaner! formatter! translator! "
    "extractor! translate! clean! resize! crop! compress! decompress! encode! "
    "decode! render! transcode! normalize! sanitize! minify! shorten! split! rotate! crop! to_json "
    "to_markdown rewrite! paraphrase!",
    "/analyze": "analyze! analyzer! analyse! analysis! checker! validator! calculator! evaluate! validate! check! "
    "compare! calculate! compute! "
    "estimate! assess! audit! inspect! lint! review! score! detect! diagnose! summarize! summarise! "
    "summary! measure! test! verify! count! stat statistics analytics insight! explain! predict! rank",
    "/generate": "generate! generator! draw! compose! draft! design! synthesize! produce! random! "
    "brainstorm! suggest! recommend! plan! think! imagine chart! diagram!",
    "/send": "send! post! publish! notify! email! mail! message! reply! tweet! share! broadcast! invite! "
    "submit! feedback! forward! respond!",
    "/navigate": "navigate! click! type scroll! hover! press! goto! go_to! back! forward! open_tab! "
    "close! select! drag! drop_down fill! focus! tab! screenshot! snapshot! visit!",
    "/monitor": "monitor! watch! subscribe! track! tail! poll! ping! health! status! uptime! observe! "
    "listen! alert!",
}
CAPABILITY_VERBS: dict[str, dict[str, float]] = _compile_lexicon(_CAPABILITY_WORDS)

# Words of a *task* that imply a step no tool text names: "bump it in pom.xml" needs an edit,
# "make sure the tests pass" something that runs them. Task-only: in a tool's description
# "fix" or "bug" say nothing about what the tool does.
_TASK_STEP_WORDS: dict[str, str] = {
    "/write": "fix! bump! upgrade! downgrade! switch! rename! refactor! migrate! correct! change! "
    "implement! tweak! adjust! stage! unstage! rewrite! port! pin! unpin! deprecate! bugfix! hotfix!",
    "/execute": "run! rerun! test! tests! testsuite! test_suite! reproduce! benchmark! build! compile! "
    "pytest! npm_test! make_test! ci!",
}
TASK_STEP_VERBS: dict[str, dict[str, float]] = _compile_lexicon(_TASK_STEP_WORDS)
#: The words of the /write step that change code or a config in place: all but staging, which is
#: git's index, not a file (jit.analysis.offline_analyzer.edits_code).
CODE_CHANGE_WORDS: tuple[str, ...] = tuple(
    w.rstrip("!") for w in _TASK_STEP_WORDS["/write"].split() if w.rstrip("!") not in ("stage", "unstage"))

#: Verbs that change code when they put something into a source file the clause names ("give the
#: client in src/http_client.py a timeout", "registered in src/app.py", "add a retry to
#: src/net.py"): a code edit only with the file beside them (jit.analysis.offline_analyzer.puts_into_code),
#: as "add a comment" or "give me the list" change no code.
CODE_EDIT_WORDS: tuple[str, ...] = ("add", "give", "register", "insert", "replace", "wire")

_DOMAIN_WORDS: dict[str, str] = {
    "/python": "python! pip! pypi! django! flask! fastapi! pandas! numpy! jupyter! pytest! conda! poetry! "
    "virtualenv! py!",
    "/javascript": "javascript! nodejs! node_js! npm! yarn! pnpm! js! deno! bun! express! jest!",
    "/typescript": "typescript! ts! tsc! tsconfig!",
    "/go": "golang! go_module! go_mod! gopls! go_package!",
    "/rust": "rust! cargo! crate! crates! rustc! clippy!",
    "/java": "java! maven! gradle! jvm! spring! junit!",
    "/csharp": "csharp! c_sharp! dotnet! net_core! nuget!",
    "/cpp": "cpp! c_plus_plus! cmake! clang! gcc!",
    "/ruby": "ruby! rubygems! gem! rails! bundler!",
    "/php": "php! composer! laravel! wordpress!",
    "/swift": "swift! xcode! ios! swiftui! cocoapods!",
    "/kotlin": "kotlin! android!",
    "/sql": "sql! sqlite! postgres! postgresql! mysql! mariadb! mssql! tsql!",
    "/shell": "bash! zsh! powershell! shell_script!",
    "/web": "html css! react! vue! angular! svelte! tailwind! nextjs! next_js! frontend! ui_component! "
    "component! animation! shadcn!",
    "/devops": "docker! kubernetes! k8s! terraform! helm! ansible! ci_cd! github_actions! jenkins! "
    "container! devops!",
    "/data_science": "dataframe! jupyter! notebook! machine_learning! scikit! sklearn! tensorflow! pytorch! "
    "model_training!",
}
DOMAIN_LEXICON: dict[str, dict[str, float]] = _compile_lexicon(_DOMAIN_WORDS)

#: Chinese terms -> the English keywords they stand for. Descriptions of many real
#: MCP tools are Chinese; CJK text has no spaces, so these are found by substring.
CJK_TERMS: dict[str, str] = {
    "搜索": "search", "检索": "search", "查询": "query", "查找": "find", "必应": "bing", "百度": "search",
    "获取": "get", "读取": "read", "下载": "download", "列出": "list", "列表": "list",
    "创建": "create", "新建": "create", "添加": "add", "插入": "insert", "写入": "write", "更新": "update",
    "修改": "edit",
    "编辑": "edit", "保存": "save", "上传": "upload", "删除": "delete", "移除": "remove",
    "执行": "execute", "运行": "run", "命令": "command", "转换": "convert", "翻译": "translate",
    "分析": "analyze", "计算": "calculate", "生成": "generate", "发送": "send", "推送": "send",
    "文件": "file", "目录": "directory", "文件夹": "folder", "路径": "path",
    "网页": "webpage", "网站": "website", "链接": "link", "浏览器": "browser", "截图": "screenshot",
    "数据库": "database", "数据": "data", "表格": "spreadsheet", "文档": "document", "幻灯片": "slide",
    "演示": "presentation", "笔记": "note", "邮件": "email", "消息": "message", "微信": "chat",
    "微博": "social", "知乎": "social", "抖音": "social", "哔哩": "video", "评论": "comment",
    "新闻": "news", "资讯": "news", "热榜": "trending", "热搜": "trending", "趋势": "trend",
    "任务": "task", "日程": "calendar", "日历": "calendar", "项目": "project",
    "股票": "stock", "基金": "fund", "金融": "finance", "汇率": "exchange_rate", "价格": "price",
    "加密货币": "crypto", "比特币": "bitcoin", "行情": "market",
    "地图": "map", "地址": "address", "天气": "weather", "路线": "route", "导航": "directions",
    "火车": "train", "车票": "ticket", "车站": "station", "航班": "flight", "酒店": "hotel",
    "旅游": "travel", "城市": "city",
    "图片": "image", "图像": "image", "视频": "video", "音频": "audio", "音乐": "music", "语音": "speech",
    "图表": "chart", "图形": "chart", "流程图": "flowchart", "绘制": "draw", "画布": "canvas",
    "游戏": "game", "菜谱": "recipe", "食谱": "recipe", "美食": "food",
    "菜品": "dish", "做菜": "cooking", "角色": "character", "算命": "fortune", "运势": "horoscope",
    "论文": "paper", "学术": "academic", "研究": "research", "医学": "medical",
    "时间": "time", "日期": "date", "时区": "timezone", "随机": "random", "代码": "code", "仓库": "repository",
    "记忆": "memory", "知识图谱": "knowledge_graph", "思考": "thinking", "模型": "model",
    "安全": "security", "日志": "log", "监控": "monitor", "商品": "product", "订单": "order",
}

# --------------------------------------------------------------------------- normalisation

_LABEL = re.compile(r"[^a-z0-9_]+")

#: Words an LLM or a user tends to write for a vocabulary label.
_CATEGORY_ALIASES: dict[str, str] = {
    "files": "filesystem", "file": "filesystem", "file_system": "filesystem", "fs": "filesystem",
    "git": "vcs", "version_control": "vcs", "source_control": "vcs", "code": "code_analysis",
    "coding": "code_analysis", "development": "code_analysis", "terminal": "shell", "command_line": "shell",
    "documents": "docs", "documentation": "docs", "document": "docs", "db": "database", "sql": "database",
    "email": "communication", "messaging": "communication", "chat": "communication",
    "social_media": "social", "tasks": "project_management", "issues": "project_management",
    "infrastructure": "cloud", "devops": "cloud", "observability": "monitoring", "logging": "monitoring",
    "images": "media", "image": "media", "video": "media", "audio": "media", "charts": "visualization",
    "maps": "location", "geo": "location", "travel": "location", "weather": "location",
    "science": "academic", "research": "academic", "games": "entertainment", "gaming": "entertainment",
    "shopping": "commerce", "ecommerce": "commerce", "thinking": "reasoning", "llm": "ai",
}


def _clean(label: str) -> str:
    return _LABEL.sub("_", str(label).strip().lower().lstrip("/")).strip("_")


def normalize_category(label: str, extra: Iterable[str] = ()) -> str | None:
    """The vocabulary category ``label`` names, or None; ``extra`` adds user-defined ones."""
    c = _clean(label)
    if c in CATEGORY_DEFINITIONS or c in extra:
        return c
    return _CATEGORY_ALIASES.get(c)


def normalize_capability(label: str) -> str | None:
    """``read``, ``/read``, ``READ`` → ``/read``; None when not in the vocabulary."""
    c = "/" + _clean(label)
    return c if c in CAPABILITY_DEFINITIONS else None


def normalize_domain(label: str) -> str | None:
    """``python``, ``/Python`` → ``/python``; None when not in the vocabulary."""
    raw = str(label).strip().lower().lstrip("/")
    raw = {"c#": "csharp", "c++": "cpp", "js": "javascript", "node": "javascript", "nodejs": "javascript",
           "ts": "typescript", "golang": "go"}.get(raw, raw)
    c = "/" + _clean(raw)
    return c if c in DOMAIN_DEFINITIONS else None

# --------------------------------------------------------------------------- phrases for use cases

#: How a capability reads as a verb in a generated use case ("search" + "web pages").
CAPABILITY_VERB_PHRASES: dict[str, str] = {
    "/read": "read", "/list": "list", "/search": "search", "/write": "create or edit", "/delete": "delete",
    "/execute": "run", "/transform": "convert", "/analyze": "analyze", "/generate": "generate",
    "/send": "send", "/navigate": "navigate", "/monitor": "monitor",
}

#: What a category's tools act on, as a noun phrase.
CATEGORY_NOUNS: dict[str, str] = {
    "filesystem": "files", "shell": "shell commands", "code_analysis": "code", "vcs": "repositories",
    "web": "web pages", "search": "search results", "browser": "browser pages", "database": "database records",
    "data": "datasets", "docs": "documents", "communication": "messages", "social": "social media posts",
    "news": "news", "project_management": "tasks and issues", "cloud": "cloud resources",
    "monitoring": "logs and metrics", "security": "security findings", "memory": "agent memory",
    "reasoning": "reasoning steps", "ai": "AI model output", "media": "media files",
    "visualization": "charts and diagrams", "finance": "financial data", "location": "places and travel data",
    "academic": "papers and research data", "entertainment": "games and entertainment data",
    "commerce": "products and orders", "utility": "utility values",
}

#: How much a tool of one category serves a shard that asks for another (1.0 for the same
#: category). Asymmetric: a paper search serves a role that wants search, not the reverse.
CATEGORY_RELATED: dict[str, dict[str, float]] = {
    "academic": {"search": 0.6, "docs": 0.5, "data": 0.4, "web": 0.3},
    "news": {"web": 0.6, "search": 0.5, "social": 0.4},
    "social": {"web": 0.5, "news": 0.4, "communication": 0.4},
    "browser": {"web": 0.7, "shell": 0.2},
    "web": {"browser": 0.5, "search": 0.4, "docs": 0.3},
    "search": {"web": 0.5, "docs": 0.3},
    "database": {"data": 0.6, "code_analysis": 0.3},
    "data": {"database": 0.5, "visualization": 0.4, "docs": 0.3, "filesystem": 0.3},
    "visualization": {"data": 0.5, "media": 0.3, "docs": 0.3},
    "docs": {"filesystem": 0.3, "web": 0.3, "search": 0.2},
    "filesystem": {"docs": 0.3, "shell": 0.3, "code_analysis": 0.3},
    "shell": {"code_analysis": 0.4, "filesystem": 0.3, "cloud": 0.3},
    "code_analysis": {"vcs": 0.4, "shell": 0.3, "filesystem": 0.3, "docs": 0.3},
    "vcs": {"code_analysis": 0.5, "project_management": 0.3, "filesystem": 0.3},
    "project_management": {"vcs": 0.3, "communication": 0.3, "docs": 0.2},
    "cloud": {"shell": 0.4, "monitoring": 0.4, "code_analysis": 0.3},
    "monitoring": {"cloud": 0.4, "shell": 0.3, "code_analysis": 0.3},
    "security": {"code_analysis": 0.4, "cloud": 0.3, "web": 0.3, "monitoring": 0.3},
    "memory": {"docs": 0.3, "reasoning": 0.3, "database": 0.2},
    "reasoning": {"memory": 0.3, "project_management": 0.2},
    "ai": {"code_analysis": 0.2, "search": 0.2},
    "media": {"visualization": 0.3, "filesystem": 0.2, "web": 0.2},
    "finance": {"data": 0.4, "search": 0.2},
    "location": {"data": 0.2, "search": 0.2},
    "communication": {"social": 0.3, "project_management": 0.3},
    "commerce": {"data": 0.3, "finance": 0.3},
    "utility": {"shell": 0.1},
}


# --------------------------------------------------------------------------- matching text against the lexicons

# The stems themselves come from jit.text (identifier_stems, prose_stems); these combine them.


def with_bigrams(stems: list[str]) -> list[str]:
    """``stems`` plus each adjacent pair as a ``a_b`` phrase token."""
    return stems + [f"{a}_{b}" for a, b in pairwise(stems)]


def name_tokens(stems: list[str]) -> list[str]:
    """Name stems, bigrams, and adjacent pairs joined (``git``+``hub`` → ``github``)."""
    return with_bigrams(stems) + [a + b for a, b in pairwise(stems)]


def cjk_terms(text: str) -> list[str]:
    """English keyword stems for the Chinese terms of :data:`CJK_TERMS` found in ``text``."""
    if not CJK.search(text):
        return []
    return [stem(eng) for term, eng in CJK_TERMS.items() if term in text]


@dataclass(slots=True)
class Evidence:
    """Stemmed tokens of one text, each with the weight of the strongest place it appears in."""

    weights: dict[str, float] = field(default_factory=dict)

    def add(self, tokens: Iterable[str], weight: float) -> None:
        w = self.weights
        for t in tokens:
            if w.get(t, 0.0) < weight:
                w[t] = weight

    def score(self, lexicon: Mapping[str, Mapping[str, float]], stop: frozenset[str] = frozenset()) -> dict[str, float]:
        """``{label: Σ weight × strength}`` over the tokens the lexicon knows.

        A matched two-word phrase hides its words: "word cloud" is a chart, not cloud infrastructure.
        """
        hidden: set[str] = set()
        for token in self.weights:
            if "_" in token and token in lexicon:
                hidden.update(token.split("_"))
        out: dict[str, float] = {}
        for token, weight in self.weights.items():
            labels = lexicon.get(token)
            if labels and token not in stop and token not in hidden:
                for label, strength in labels.items():
                    out[label] = out.get(label, 0.0) + weight * strength
        return out
