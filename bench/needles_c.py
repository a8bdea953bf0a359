"""A held-out needle set in the generated corpus's own words: :data:`NEEDLES_C`.

Why a third set: the generated corpus (:mod:`hermes_workload.corpus`) has a closed vocabulary
(about two hundred dev nouns, fifty adjectives, forty verbs, a dozen topics, and a few CJK
phrases, plus made-up rare words). The held-out set :mod:`bench.needles_b` was written as a
person talks (laptop, sent, twice, wedding), so on the generated corpus 119 of its 124 queries
matched nothing but the needle itself and a 1.00 there says little about ranking. These
conversations are about the everyday dev and ops things the corpus talks about too (cache,
config, worker, queue, certificate, deploy, 日志, キャッシュ, 데이터베이스 연결), so their
vague and spread queries compete with thousands of generated messages holding the same words.

Written like :mod:`bench.needles_b`: by someone who read neither the ranking code nor the first
set's queries; each conversation and its queries written before the bench ran on them, measured
once (``python -m bench.relevance --needles c``), nothing changed to suit the ranking. The
corpus's vocabulary was read; the ranking was not.
"""

from __future__ import annotations

from .needle_model import A, T, U, Needle, needle, validate

NEEDLES_C: list[Needle] = [
    needle(
        "c-webhook-retries", "en", "cli", 2, "Webhook retries flood the order queue",
        [
            U("the webhook handler for payment events started timing out yesterday and now the queue "
              "has 40k duplicate order events. what happened?"),
            T("terminal", {"command": "redis-cli llen queue:orders"}, "(integer) 40212",
              say="How long is the queue?"),
            A("The provider retries a webhook when your handler doesn't answer within 10 seconds. The "
              "handler does the whole order update before it responds, and the database was slow, so "
              "every event was delivered several times. Each retry pushed another copy into the queue."),
            U("so the fix is to answer faster?"),
            A("Answer with 200 right away and do the work in a worker, and make the handler idempotent: "
              "store the event id with a unique index and skip ids you have seen. Then drain the queue "
              "once with a dedup pass."),
            U("added the event id table and moved the work to the worker, the queue is back to zero"),
        ],
        {"prefix": "webho", "words": "duplicate order events", "vague": "queue worker handler",
         "spread": "webhook retry worker"},
    ),
    needle(
        "c-staging-certificate", "en", "telegram", 9, "Expired certificate on the staging gateway",
        [
            U("the mobile app can't reach staging since this morning, error says certificate expired"),
            A("Staging's gateway serves its own certificate, separate from production. If the renewal "
              "job didn't run, the certificate expired at midnight. Can you check the cronjob that renews it?"),
            U("the cronjob failed three nights in a row, the token for the dns provider was rotated and "
              "nobody updated the secret"),
            A("That explains it: the DNS challenge needs that token. Update the secret in the cluster, run "
              "the job by hand once, and add an alert when the certificate has less than 14 days left."),
            U("secret updated, new certificate is live, alert added to the dashboard"),
        ],
        {"prefix": "certif", "words": "token rotated secret", "vague": "certificate expired staging",
         "spread": "gateway cronjob dashboard"},
    ),
    needle(
        "c-stale-prices", "en", "cli", 16, "Stale prices from the product page cache",
        [
            U("customers see old prices on the product page for up to an hour after we change them in "
              "the admin. the price is right in the database"),
            T("terminal", {"command": "redis-cli ttl product:4411:page"}, "(integer) 3412",
              say="Checking the cached page."),
            A("The rendered page is cached in redis with a one-hour TTL, and the admin writes the new "
              "price to the database without touching that key. So the cache keeps serving the old "
              "page until it expires."),
            U("can we clear just that product's cache when the price changes?"),
            A("Yes: after the admin saves a price, delete the product's page key (and its listing keys) "
              "in the same request, or publish an event that a small worker uses to invalidate them. "
              "Keep the TTL as a safety net."),
            U("added the invalidation in the save handler, prices update instantly now"),
        ],
        {"prefix": "invalida", "words": "old prices page", "vague": "cache old page",
         "spread": "customers ttl handler"},
        split_turn=3,
    ),
    needle(
        "c-backup-disk", "en", "cli", 30, "Backup job fills the disk on db-2",
        [
            U("db-2 ran out of disk last night and postgres went read-only. the alert fired at 03:10"),
            T("terminal", {"command": "du -sh /var/backups/* | sort -h | tail -3"},
              "41G\t/var/backups/2026-01-10\n41G\t/var/backups/2026-01-11\n42G\t/var/backups/2026-01-12"),
            A("The nightly backup writes a full dump to the same disk and nothing removes the old ones. "
              "Three days of dumps is 124 GB. The retention step in the backup script exits early when "
              "the upload to the bucket fails, so old dumps were never deleted."),
            U("the upload failed because the bucket policy changed"),
            A("Fix the policy first, then make retention run regardless of the upload result, and keep "
              "at most two local dumps. Better still, stream the dump straight to the bucket so it never "
              "sits on the database disk."),
            U("policy fixed and the script now streams to the bucket, disk is at 38%"),
        ],
        {"prefix": "retent", "words": "bucket policy changed", "vague": "disk backup old",
         "spread": "postgres retention streams"},
    ),
    needle(
        "c-evening-test", "en", "discord", 70, "A billing test that fails only after 7 pm",
        [
            U("one test in the billing suite fails every evening after 7 pm and passes in the morning. "
              "CI runs in UTC, I'm in UTC-5"),
            A("That pattern is almost always a date boundary. After 7 pm your local date is still today "
              "but UTC is already tomorrow. Look for a test that builds a date from the local clock and "
              "compares it with one the code builds in UTC."),
            U("found it, the fixture uses date.today() and the invoice code uses utcnow()"),
            A("Pin the clock in the fixture and pass the timezone explicitly; then both sides agree "
              "whatever time the test runs."),
            U("froze time in the fixture, passes at any hour now"),
        ],
        {"prefix": "utcn", "words": "fixture invoice code", "vague": "test date local",
         "spread": "billing tomorrow froze"},
    ),
    needle(
        "c-partner-quota", "en", "slack", 110, "Partner integration hits our rate limit",
        [
            U("the partner integration is getting 429s from our public api since they moved their sync "
              "to every minute"),
            A("Their client hits the limit of 600 requests per minute per token. Options: raise their "
              "quota, ask them to batch, or give them a webhook so they don't poll."),
            U("they said they can't change the client this quarter"),
            A("Then raise the quota for their token only, in the tenant settings, and add a metric and "
              "an alert so we see when they approach it again. Keep the global limit as it is."),
            U("bumped their quota to 2000 and added the alert"),
        ],
        {"prefix": "quot", "words": "partner 429s sync", "vague": "client limit token",
         "spread": "partner tenant 2000"},
    ),
    needle(
        "c-worker-leak", "en", "cli", 180, "Image worker grows until it is killed",
        [
            U("the image resize worker grows to 3 GB over a day and then gets killed. a restart fixes it "
              "for a day"),
            T("terminal", {"command": "py-spy dump --pid 4121"},
              "Thread 4121 (idle)\n    resize (worker/images.py:88)\n    handle (worker/main.py:42)",
              say="Where is it spending its time?"),
            A("The resize function opens each image with Pillow and keeps a reference in a module-level "
              "dict used as a cache, keyed by URL. Nothing ever evicts entries, so every image it "
              "processed stays in memory."),
            U("that cache was meant to help with repeated thumbnails"),
            A("Use an LRU with a fixed size instead, say 256 entries, or cache the resized bytes on disk. "
              "Also set max-tasks-per-child on the worker pool so a leak can never grow forever."),
            U("switched to lru_cache with 256 and max tasks per child 500, memory flat at 400 MB"),
        ],
        {"prefix": "pillo", "words": "resize worker killed", "vague": "memory cache image",
         "spread": "thumbnails lru restart"},
        split_turn=3,
    ),
    needle(
        "c-vpn-internal-dns", "en", "telegram", 300, "Internal hostnames stop resolving on the VPN",
        [
            U("since the router firmware update, laptops on the VPN can't resolve anything under "
              ".internal, public domains work"),
            A("The VPN probably stopped pushing the internal DNS server, so laptops ask the public "
              "resolver, which knows nothing about .internal. Check the DNS settings the VPN hands out."),
            U("the push dhcp-option DNS line is gone from the server config after the update"),
            A("Firmware updates sometimes reset custom config. Add the line back, restart the VPN "
              "service, and keep a copy of the config file in the repo so the next update can be "
              "checked against it."),
            U("line restored, hosts resolve again, config is in git now"),
        ],
        {"prefix": "firmw", "words": "internal dns server", "vague": "config file update",
         "spread": "vpn dhcp git"},
    ),
    # ----------------------------------------------------------------------- CJK
    needle(
        "c-zh-log-disk", "zh", "cli", 20, "应用日志把磁盘写满了",
        [
            U("服务器磁盘又满了，查了一下是应用日志占了 80G，日志没有自动清理吗？"),
            T("terminal", {"command": "du -sh /var/log/app"}, "80G\t/var/log/app", say="看一下日志目录。"),
            A("日志只按天切割，没有设置保留天数，所以旧的日志一直留在磁盘上。建议用 logrotate 保留最近 14 天，"
              "并且压缩旧文件。"),
            U("能不能顺便把错误日志单独放一个文件？"),
            A("可以，在日志配置里给 ERROR 级别单独加一个 handler，写到 error.log，告警也只看这个文件就行。"),
            U("配置好了，磁盘占用降到 12G"),
        ],
        {"prefix": "logrot", "words": "保留 天数 压缩", "vague": "日志 磁盘",
         "spread": "应用日志 告警 占用"},
    ),
    needle(
        "c-ja-cache-env", "ja", "slack", 140, "本番サーバーでキャッシュが効かない",
        [
            U("本番サーバーに切り替えてからレスポンスが遅いです。キャッシュが効いていないように見えます。"),
            A("設定ファイルを確認したところ、本番の環境変数で CACHE_URL が空になっていました。そのためアプリは"
              "キャッシュなしで毎回データベースに問い合わせています。"),
            U("ステージングでは設定されていました。デプロイ手順で漏れたみたいです"),
            A("デプロイ手順のチェックリストに環境変数の差分確認を追加しましょう。起動時に必須の設定がなければ"
              "エラーで止まるようにするのも有効です。"),
            U("CACHE_URL を設定して再起動したら、レスポンスが 80ms に戻りました"),
        ],
        {"prefix": "チェックリ", "words": "環境変数 差分", "vague": "キャッシュ レスポンス 遅い",
         "spread": "本番サーバー ステージング 80ms"},
    ),
    needle(
        "c-ko-db-pool", "ko", "cli", 240, "데이터베이스 연결 풀 고갈",
        [
            U("주문 서비스에서 데이터베이스 연결 타임아웃 에러가 점심시간마다 나요."),
            A("점심시간에 트래픽이 몰리면 연결 풀이 모두 사용 중이 됩니다. 현재 풀 크기가 10인데 느린 쿼리가 "
              "연결을 오래 잡고 있으면 새 요청은 타임아웃까지 기다리게 돼요."),
            U("느린 쿼리는 어떻게 찾죠?"),
            A("슬로우 쿼리 로그를 켜고 1초 이상 걸리는 쿼리를 모아 보세요. 대부분 인덱스가 없는 조회일 가능성이 높아요."),
            U("주문 테이블에 인덱스를 추가했더니 타임아웃이 사라졌어요"),
        ],
        {"prefix": "점심시", "words": "슬로우 쿼리 로그", "vague": "데이터베이스 연결 에러",
         "spread": "점심시간 슬로우 인덱스"},
        split_turn=2,
    ),
    needle(
        "c-zh-deploy-rollback", "zh", "telegram", 330, "自动部署后订单接口报错",
        [
            U("今天自动部署以后，订单接口一直返回 500，用户反馈下不了单。"),
            A("先回滚到上一个版本恢复服务。日志里是数据库迁移失败：新版本的代码依赖一个新字段，但迁移脚本没有在"
              "部署前执行。"),
            U("已经回滚了，服务恢复正常。以后怎么避免？"),
            A("把数据库迁移作为部署流水线的一步，放在发布新代码之前，迁移失败就停止部署。新字段要先兼容旧代码，分两次发布。"),
            U("流水线已经改好，下次发布先跑迁移"),
        ],
        {"prefix": "回滚", "words": "迁移脚本 字段", "vague": "部署 接口 500",
         "spread": "下不了单 流水线 兼容"},
    ),
]

#: A small set: the model's full check (40 needles, every age bucket four times) is for the
#: first set; tests/bench/test_relevance_needles_b.py checks this one's own spread.
validate(NEEDLES_C, min_needles=12, min_cjk=4)
