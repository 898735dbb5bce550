"""Deterministic synthetic workspaces for ``benchmarks/scale.py``: word lists, notes, queries,
workspace files on disk, and :class:`SampledVectorEmbedder` (cheap, deterministic document
vectors drawn from real ones).

``scale.py`` imports (and so re-exports) what it uses from here; other scripts may use those
names as ``scale.<name>``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import random
import re
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: Bump when the generated text changes, so cached workspaces under --out are regenerated.
CORPUS_VERSION = "1"
#: The last day of the generated daily logs; also the clock (``MEMDIR_NOW``) of the searches.
CORPUS_END = dt.date(2026, 11, 30)
CORPUS_DAYS = 730
#: Per-dimension noise added to the sampled document vectors (see SampledVectorEmbedder).
NOISE_SIGMA = 0.01


# -- vocabulary -------------------------------------------------------------------------------


def _words(text: str, sep: str | None = None) -> list[str]:
    return [word.strip() for word in text.split(sep) if word.strip()]


WORDS: dict[str, list[str]] = {
    "en_tech": _words("""
        redis postgres mysql sqlite database cache migration port deploy kubernetes cluster node
        pod ingress nginx certificate backup snapshot replica shard index query latency
        throughput timeout retry queue kafka topic consumer producer schema table column
        endpoint token oauth session cookie login password secret vault config yaml docker
        image registry pipeline build test release version branch merge review commit rollback
        incident outage alert pager dashboard grafana prometheus metric log trace span memory
        cpu disk volume bucket cdn dns domain loadbalancer firewall vpn proxy gateway webhook
        cron scheduler worker thread process socket tls ssh terraform ansible helm chart
        namespace quota budget invoice contract roadmap sprint backlog ticket bug feature
        refactor benchmark profiler flamegraph heap leak deadlock lock mutex semaphore
        transaction isolation vacuum autovacuum wal checkpoint compaction partition tenant
        billing payment checkout search embedding vector model prompt agent tokenizer dataset
        notebook python rust golang typescript react frontend backend mobile android ios
        laptop monitor keyboard
    """),
    "en_life": _words("""
        coffee lunch dinner breakfast gym run swim yoga book movie trip flight hotel train
        weekend birthday doctor dentist groceries rent garden cat dog piano guitar recipe bread
        tea weather rain vacation holiday school parents kids bike hike museum concert podcast
        newsletter walk park
    """),
    "en_verb": _words("""
        migrate deploy fix refactor benchmark upgrade rotate restart debug document review
        measure profile tune rollback provision monitor archive delete rename split merge pin
        bump test ship schedule cancel postpone approve reject buy book call email ask remind
    """),
    "en_adj": _words("""
        slow fast flaky stale broken stable critical minor noisy expensive cheap legacy new old
        shared private primary secondary internal external temporary permanent urgent
    """),
    "en_time": _words(
        "today | tomorrow | next week | on Friday | before the release | after lunch | this "
        "quarter | by the end of the month | on Monday | after the freeze | tonight",
        "|",
    ),
    "person": _words("""
        Alice Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Mallory Niaj Olivia Peggy Rupert
        Sybil Trent Victor Walter Yuki 张伟 王芳 李娜 刘洋 陈静 杨磊 赵敏 黄强 周杰 吴磊 孙丽 马超
    """),
    "zh_noun": _words("""
        数据库 缓存 迁移 端口 分布式锁 会议 决定 服务器 集群 节点 部署 配置 日志 监控 告警 故障 回滚
        备份 快照 副本 分片 索引 查询 延迟 吞吐量 超时 重试 队列 消息 主题 消费者 生产者 接口 令牌
        认证 会话 密码 密钥 镜像 流水线 测试 发布 版本 分支 评审 事故 仪表盘 指标 内存 磁盘 存储
        域名 负载均衡 证书 性能 压测 需求 产品 用户 客户 合同 预算 发票 报销 周报 季度 目标 复盘
        面试 招聘 培训 文档 方案 架构 重构 技术债 权限 网关 防火墙 定时任务 线程 进程 事务 死锁
        内存泄漏 火焰图 向量 模型 提示词 数据集 前端 后端 咖啡 午饭 晚饭 健身 跑步 游泳 电影 旅行
        航班 酒店 火车 周末 生日 医生 体检 牙医 超市 房租 钢琴 菜谱 面包 天气 加班 假期 孩子 学校
        父母 自行车 博物馆 音乐会 播客
    """),
    "zh_verb": _words("""
        讨论 决定 迁移 部署 修复 优化 升级 重启 排查 记录 评估 测量 调整 回滚 上线 下线 确认 同意
        推迟 取消 安排 提醒 整理 学习 购买 检查 清理 扩容 缩容 拆分 合并 备份 恢复 审批 复现
    """),
    "zh_time": _words("今天 明天 下周 周五 月底 上线之前 午饭后 本季度 周一 封版之后 今晚 下个月"),
}
TOPICS = _words("""
    projects infra meetings people decisions incidents reading health travel recipes finance
    learning hiring ops 家庭 工作
""")
HOSTS = _words("db cache api web queue search auth billing gpu edge")

# Line templates: each {name} is replaced by a fresh word from WORDS[name]; {port} and {id} by
# a random port and identifier (host name, ticket, version or number).
EN_LINES = (
    "- {person} decided to {en_verb} the {en_tech} {en_time}.",
    "- The {en_adj} {en_tech} on port {port} needs a {en_tech}; {en_verb} it {en_time}.",
    "- Meeting with {person} about {en_tech} and {en_tech}: we will {en_verb} the {en_tech} "
    "{en_time}.",
    "- Lesson: never {en_verb} a {en_tech} without a {en_tech}.",
    "- Todo: {en_verb} {en_tech} ({person}, {en_time}).",
    "- The {en_tech} {id} was {en_adj} again; {person} will {en_verb} the {en_tech}.",
    "- Went for {en_life} with {person}, then {en_life} and {en_life}.",
    "- Remember: {person} prefers {en_life} over {en_life}; {en_verb} the {en_life} {en_time}.",
)
ZH_LINES = (
    "- {person}决定{zh_time}{zh_verb}{zh_noun}。",
    "- 关于{zh_noun}和{zh_noun}的会议：{person}同意{zh_time}{zh_verb}{zh_noun}，"
    "{person}负责{zh_noun}。",
    "- {zh_noun}的端口改成 {port}，需要{zh_verb}{zh_noun}和{zh_noun}。",
    "- 经验：{zh_verb}{zh_noun}之前一定要先{zh_verb}{zh_noun}。",
    "- 待办：{zh_time}{zh_verb}{zh_noun}（{person}）",
    "- {zh_noun} {id} 又出现{zh_noun}问题，{person}在{zh_verb}{zh_noun}。",
    "- {zh_time}和{person}一起{zh_noun}，然后去{zh_noun}。",
)
MIXED_LINES = (
    "- {person} 说 {en_tech} 的{zh_noun}需要{zh_verb}，{en_verb} {en_time}.",
    "- {en_tech} {id}：{zh_verb}{zh_noun}，见 {en_tech} 文档。",
    "- 决定用 {en_tech} 做{zh_noun}，{person} 负责 {en_tech}。",
)
EN_QUERIES = (
    "which port does {en_tech} use",
    "what did we decide about the {en_tech}",
    "{en_verb} {en_tech} {en_tech}",
    "{person} {en_tech}",
    "why was the {en_tech} {en_adj}",
    "{en_life} with {person}",
    "{host}",
)
ZH_QUERIES = (
    "{zh_noun}{zh_verb}的决定",
    "{person}关于{zh_noun}说了什么",
    "{zh_noun} {zh_noun}",
    "{zh_time}要{zh_verb}什么",
    "{zh_noun}的端口是多少",
)
MIXED_QUERIES = (
    "{en_tech} {zh_noun}",
    "{person} {en_tech} {zh_verb}",
    "{en_tech} 的{zh_noun}怎么{zh_verb}",
)
_SLOT_RE = re.compile(r"\{(\w+)\}")
_CJK_RE = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")


class Vocabulary:
    """The word lists with Zipf-like frequencies, so keyword queries have realistic selectivity:
    a few words are everywhere, most are rare. Which words are frequent is fixed by the seed."""

    def __init__(self, seed: int) -> None:
        rng = random.Random(seed)
        self.lists: dict[str, list[str]] = {}
        self.cum_weights: dict[str, list[float]] = {}
        for name, words in WORDS.items():
            order = list(words)
            rng.shuffle(order)
            self.lists[name] = order
            total, cumulative = 0.0, []
            for rank in range(len(order)):
                total += 1.0 / (rank + 1) ** 1.05
                cumulative.append(total)
            self.cum_weights[name] = cumulative

    def draw(self, rng: random.Random, name: str, *, uniform: bool = False) -> str:
        """A word of list ``name``: by frequency, or uniformly (common and rare alike)."""
        if name == "port":
            return str(rng.randrange(1024, 65535))
        if name == "host":
            return f"{rng.choice(HOSTS)}-{rng.randrange(1, 40)}.prod"
        if name == "id":
            return rng.choice(
                (
                    f"{rng.choice(HOSTS)}-{rng.randrange(1, 40)}.prod",
                    f"OPS-{rng.randrange(100, 9999)}",
                    f"v{rng.randrange(1, 6)}.{rng.randrange(20)}.{rng.randrange(10)}",
                )
            )
        if uniform:
            return rng.choice(self.lists[name])
        return rng.choices(self.lists[name], cum_weights=self.cum_weights[name])[0]

    def fill(self, rng: random.Random, template: str, *, uniform_share: float = 0.0) -> str:
        """``template`` with every ``{slot}`` replaced by a fresh draw."""
        return _SLOT_RE.sub(
            lambda m: self.draw(rng, m.group(1), uniform=rng.random() < uniform_share), template
        )


def estimate_tokens(text: str) -> int:
    """The token estimate of docs/design.md#chunking (a CJK char is a token, else 4 chars),
    kept here so that the corpus does not change when memdir's tokenizer does."""
    cjk = len(_CJK_RE.findall(text))
    return cjk + (len(text) - cjk + 3) // 4


def note_text(vocab: Vocabulary, rng: random.Random, title: str, zh_share: float) -> str:
    """A Markdown note of 1,500-5,000 estimated tokens (about 10 chunks of 400 on average);
    ``zh_share`` of its lines are Chinese, 10% mixed, the rest English."""
    target = rng.randint(1500, 5000)
    lines = [f"# {title}", ""]
    tokens = 0
    while tokens < target:
        if rng.random() < 0.08:
            heading = vocab.draw(rng, "zh_noun" if rng.random() < zh_share else "en_tech")
            lines += ["", f"## {heading}", ""]
        roll = rng.random()
        if roll < 0.1:
            templates = MIXED_LINES
        elif roll < 0.1 + 0.9 * zh_share:
            templates = ZH_LINES
        else:
            templates = EN_LINES
        line = vocab.fill(rng, rng.choice(templates))
        lines.append(line)
        tokens += estimate_tokens(line)
    return "\n".join(lines) + "\n"


def corpus_files(n_files: int, seed: int) -> Iterator[tuple[str, str]]:
    """``(relative path, text)`` of a deterministic synthetic workspace of ``n_files`` files.

    Daily logs are 40% of the files, at most one per day over :data:`CORPUS_DAYS` days ending
    :data:`CORPUS_END`; the rest are topic notes ``memory/<topic>/<n>.md``.
    """
    vocab = Vocabulary(seed)
    rng = random.Random(seed * 7919 + n_files)
    n_daily = min(CORPUS_DAYS, int(n_files * 0.4))
    for offset in sorted(rng.sample(range(CORPUS_DAYS), n_daily)):
        day = (CORPUS_END - dt.timedelta(days=offset)).isoformat()
        yield f"memory/{day}.md", note_text(vocab, rng, day, rng.choice((0.2, 0.5, 0.8)))
    counters: dict[str, int] = {}
    for _ in range(n_files - n_daily):
        topic = rng.choice(TOPICS)
        n = counters[topic] = counters.get(topic, 0) + 1
        title = f"{topic} {n}: {vocab.draw(rng, 'en_tech')} / {vocab.draw(rng, 'zh_noun')}"
        yield f"memory/{topic}/{n}.md", note_text(vocab, rng, title, rng.choice((0.2, 0.5, 0.8)))


def make_queries(n: int, seed: int) -> list[str]:
    """``n`` queries: 40% English, 35% Chinese, 25% mixed; half the words drawn uniformly so
    that rare terms are asked for as well as common ones."""
    vocab = Vocabulary(seed)
    rng = random.Random(seed + 1)
    queries = []
    for i in range(n):
        group = EN_QUERIES if i % 20 < 8 else ZH_QUERIES if i % 20 < 15 else MIXED_QUERIES
        queries.append(vocab.fill(rng, rng.choice(group), uniform_share=0.5))
    return queries


# -- workspaces -------------------------------------------------------------------------------


@dataclass
class WorkspaceStats:
    """A generated workspace on disk."""

    root: Path
    files: int
    bytes: int
    reused: bool


def write_workspace(root: Path, n_files: int, seed: int) -> WorkspaceStats:
    """Generate the workspace of ``n_files`` at ``root``, or reuse the one already there (a
    marker file records corpus version, size and seed; a mismatch regenerates)."""
    from memdir.workspace.templates import init_workspace

    marker = root / ".scale-corpus.json"
    wanted = {"version": CORPUS_VERSION, "files": n_files, "seed": seed}
    if marker.is_file():
        saved = json.loads(marker.read_text(encoding="utf-8"))
        if {key: saved.get(key) for key in wanted} == wanted:
            return WorkspaceStats(root, n_files, int(saved["bytes"]), reused=True)
    if root.exists():
        shutil.rmtree(root)
    init_workspace(root, "en")
    total = 0
    for rel, text in corpus_files(n_files, seed):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        total += path.write_bytes(text.encode("utf-8"))
    marker.write_text(json.dumps({**wanted, "bytes": total}), encoding="utf-8")
    return WorkspaceStats(root, n_files, total, reused=False)


def index_bytes(state_dir: Path) -> int:
    """Bytes of the index database with its WAL and shared-memory files."""
    return sum(p.stat().st_size for p in state_dir.glob("index.sqlite*") if p.is_file())


def remove_index(root: Path) -> None:
    for path in (root / ".memdir").glob("index.sqlite*"):
        path.unlink()


# -- sampled document vectors -----------------------------------------------------------------


class SampledVectorEmbedder:
    """The real model's identity (provider, model id, provider key, dims) with cheap document
    vectors and real query vectors.

    Each document text gets one of ``samples`` (real vectors of real chunks of this corpus),
    picked by the text's sha256, plus Gaussian noise of :data:`NOISE_SIGMA` per dimension seeded
    by the same hash, re-normalised: deterministic, the real dimension, about the real vectors'
    spread, and no exact ties (so the two vector backends can be compared on top-k ids).
    """

    def __init__(self, real: Any, samples: np.ndarray) -> None:
        self.real = real
        self.provider: str = real.provider
        self.model_id: str = real.model_id
        self.provider_key: str = real.provider_key
        self.dims: int = real.dims
        if samples.ndim != 2 or samples.shape[1] != self.dims or not len(samples):
            raise ValueError(f"need sample vectors of shape (n, {self.dims}), got {samples.shape}")
        self.samples = samples.astype(np.float32)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dims), dtype=np.float32)
        for row, text in enumerate(texts):
            digest = hashlib.sha256(text.encode("utf-8")).digest()
            base = self.samples[int.from_bytes(digest[:8], "little") % len(self.samples)]
            noise = np.random.default_rng(int.from_bytes(digest[8:16], "little"))
            vec = base + NOISE_SIGMA * noise.standard_normal(self.dims).astype(np.float32)
            out[row] = vec / np.linalg.norm(vec)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self.real.embed_query(text))


# -- short notes (the hooks and cold-start benchmarks) ------------------------------------------

#: Facts the short-note workspaces hold, each on one line of one note, with the prompts that
#: ask for them (Chinese, English): a recall has something to find.
SHORT_FACTS = (
    (
        "memory/projects/redis-cache.md",
        "- staging 的 Redis 缓存端口改成 6380，张伟负责迁移，周五之前完成。",
        "staging 的 Redis 缓存端口改成多少了？谁负责迁移？",
    ),
    (
        "memory/projects/staging-db.md",
        "- The staging postgres database listens on port 5433; Priya decided it on Monday.",
        "which port does the staging postgres database listen on, and who decided it?",
    ),
)


def short_notes(n_files: int, seed: int) -> dict[str, str]:
    """``n_files`` short Markdown notes (3-8 lines, 50-300 estimated tokens: one or two chunks
    each, like the notes an agent or a person keeps), Chinese, English and mixed: 30% daily
    logs, the rest topic notes ``memory/<topic>/<n>.md``; :data:`SHORT_FACTS` among them."""
    vocab = Vocabulary(seed)
    rng = random.Random(seed * 104729 + n_files)
    files: dict[str, str] = {}
    for path, line, _prompt in SHORT_FACTS[: max(1, n_files)]:
        files[path] = f"# {Path(path).stem}\n\n{line}\n"
    n_daily = min(CORPUS_DAYS, int(n_files * 0.3))
    days = sorted(rng.sample(range(CORPUS_DAYS), n_daily))
    counters: dict[str, int] = {}
    while len(files) < n_files:
        zh_share = rng.choice((0.2, 0.5, 0.8))
        if days:
            title = (CORPUS_END - dt.timedelta(days=days.pop())).isoformat()
            path = f"memory/{title}.md"
        else:
            topic = rng.choice(TOPICS)
            n = counters[topic] = counters.get(topic, 0) + 1
            title = f"{vocab.draw(rng, 'en_tech')} / {vocab.draw(rng, 'zh_noun')}"
            path = f"memory/{topic}/{n}.md"
        lines = [f"# {title}", ""]
        for _ in range(rng.randint(3, 8)):
            roll = rng.random()
            if roll < 0.1:
                templates = MIXED_LINES
            elif roll < 0.1 + 0.9 * zh_share:
                templates = ZH_LINES
            else:
                templates = EN_LINES
            lines.append(vocab.fill(rng, rng.choice(templates)))
        files[path] = "\n".join(lines) + "\n"
    return files
