"""The question inside a prompt (``search/prompts.py``): auto-recall searches for what the
person asks, not for the code, config or log they pasted, and for nothing when they only ask
for work."""

from __future__ import annotations

import pytest

from memdir.search.prompts import is_question, prose_lines, recall_query

GO_PASTE = """func (c *Client) Query(ctx context.Context, id string) (*Status, error) {
\treq := &TradeQuery{OutTradeNo: id}
\tresp, err := c.cli.TradeQuery(ctx, req)
\tif err != nil {
\t\treturn nil, fmt.Errorf("query %s: %w", id, err)
\t}
\treturn &Status{ID: resp.TradeNo}, nil
}"""

LOG_PASTE = (
    "2026-11-28 10:02:14.118 ERROR [settle-daily] java.lang.OutOfMemoryError: Java heap space\n"
    """\tat com.pay.settle.Reader.readAll(Reader.java:88)
\tat com.pay.settle.Job.run(Job.java:41)
Caused by: java.io.IOException: stream closed"""
)


@pytest.mark.parametrize(
    ("prompt", "query"),
    [
        (
            "Wrap this in a retry loop with backoff. Before you write it — what retry policy "
            "did we agree on for failed channel queries?\n\n" + GO_PASTE,
            "Before you write it — what retry policy did we agree on for failed channel queries?",
        ),
        (
            LOG_PASTE + "\n\n月底账单量一大又 OOM 了。我记得之前对账 job 也这么挂过一次，"
            "当时 heap 提到多大重跑的？",
            "我记得之前对账 job 也这么挂过一次，当时 heap 提到多大重跑的？",
        ),
        (  # a short question takes the sentence before it: what "it" is
            "I'm fairly sure we have a rule about what's allowed as a Loki label. "
            "What was it exactly?",
            "I'm fairly sure we have a rule about what's allowed as a Loki label. "
            "What was it exactly?",
        ),
        (  # no question mark: a Chinese question word outside an instruction
            "生产 redis-pay 的端口是多少来着",
            "生产 redis-pay 的端口是多少来着",
        ),
        ("db port?", "db port?"),  # terse, two plain words: a person, not a code fragment
        (  # asking memory to look something up is a question whatever the verb
            "行政问我团建预算到底批了多少，帮我找一下数字",
            "行政问我团建预算到底批了多少，帮我找一下数字",
        ),
    ],
)
def test_the_question_is_the_query(prompt: str, query: str) -> None:
    found = recall_query(prompt)
    assert found.kind == "question"
    assert found.query == query


@pytest.mark.parametrize(
    "prompt",
    [
        "把这段代码改成泛型，int64 和 string 两个版本合成一个\n\n" + GO_PASTE,
        "给这个函数加注释，解释每一步在干嘛，尤其是最后那个 bisect 为什么要减 1，注释写英文",
        "Explain what this regex accepts, then rewrite it so it also allows a dash: "
        "^(?:\\+?65)?[689]\\d{7}$",
        "Fix these lint errors:\n\ninternal/notify/wechat.go:47:15: Error return value of "
        "`resp.Body.Close` is not checked (errcheck)",
        "go test -race 跑出来这个，帮我把 race 修掉\n\n" + LOG_PASTE,
        "写个 Python 脚本读 JSON Lines 文件。文件可能有好几个 G，别一次性读进内存；",
        "Write a multi-stage Dockerfile for a Go 1.23 service with a distroless final stage.",
    ],
)
def test_a_pure_instruction_recalls_nothing(prompt: str) -> None:
    found = recall_query(prompt)
    assert found.query == ""
    assert found.kind == "instruction"


def test_a_remark_is_searched_as_written() -> None:
    found = recall_query("I'm thinking of going back to Kyoto in the spring")
    assert found == recall_query("I'm thinking of going back to Kyoto in the spring")
    assert found.kind == "remark"
    assert found.query == "I'm thinking of going back to Kyoto in the spring"


def test_code_config_and_logs_are_not_prose() -> None:
    prompt = "redis:\n  addr: redis-pay.prod.internal:6379\n  db: 0\nWHERE e.warehouse = 'KS02'\n"
    prose, pasted = prose_lines(prompt + LOG_PASTE + "\nWhere is the admin console again?")
    assert prose == ["Where is the admin console again?"]
    assert pasted


def test_question_words_inside_a_request_for_work_are_not_a_question() -> None:
    assert not is_question("顺便写一下 Go 里怎么把游标编码成 base64 字符串")
    assert is_question("payment-service 的 gRPC 端口现在是多少？")
    assert not is_question("65)?")  # a fragment of a pasted regex
