"""A held-out needle set in the generated corpus's own words: :data:`NEEDLES_C`.

Why a third set: the generated corpus (:mod:`hermes_workload.corpus`) has a closed vocabulary
(about two hundred dev nouns, fifty adjectives, forty verbs, a dozen topics, and a few CJK
phrases, plus made-up rare words). The held-out set :mod:`bench.needles_b` was written as a
person talks (laptop, sent, twice, wedding), so on the generated corpus 119 of its 124 queries
matched nothing but the needle itself and a 1.00 there says little about ranking. These
conversations are about the everyday dev and ops things the corpus talks about too (cache,
config, worker, queue, certificate, deploy, 日志, キャッシュ, 데이터베이스 연결), so their
vague and spread queries compete with thousands of generated messages holding the same words.
24 conversations: 16 English, 3 Chinese, 3 Japanese, 2 Korean. The first twelve were measured
before the other twelve were written (the figures of both are in bench/README.md).

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
    # ----------------------------------------------------------------------- more, written
    # after the first twelve were measured (same rules; see the module's docstring).
    needle(
        "c-nightly-disk-alert", "en", "slack", 4, "Disk alert pages every night during the snapshot",
        [
            U("the disk alert on the metrics host pages me every night around 2 am and resolves itself "
              "by 3. it's getting old"),
            A("That lines up with the nightly snapshot: it writes a temporary archive to the same volume, "
              "usage crosses 90% for about forty minutes, then the archive is uploaded and removed. The "
              "alert has no 'for' duration, so a single scrape over the threshold pages you."),
            U("can we just ignore it during the backup window?"),
            A("Better to fix the rule than mute a window: add for: 30m so short spikes don't page, and "
              "alert on the predicted fill time (predict_linear over 6 hours) instead of a fixed "
              "percentage. And point the snapshot's temporary archive at a different volume."),
            U("changed the rule to predict_linear with for 30m and moved the temp dir, quiet night"),
        ],
        {"prefix": "predic", "words": "alert pages night", "vague": "alert snapshot volume",
         "spread": "metrics threshold quiet"},
    ),
    needle(
        "c-force-push", "en", "cli", 6, "Force push wiped commits on the release branch",
        [
            U("someone force pushed to release/2.3 and two commits from yesterday are gone from the "
              "branch. can we get them back?"),
            T("terminal", {"command": "git reflog show origin/release/2.3 -n 5"},
              "9c1e2ab refs/remotes/origin/release/2.3@{0}: fetch: forced-update\n"
              "4f7d9e0 refs/remotes/origin/release/2.3@{1}: fetch: fast-forward",
              say="Your clone may still remember the old tip."),
            A("Your local reflog still has the old tip: 4f7d9e0 is where the branch was before the "
              "forced update. Create a branch from it, check the two commits are there, and cherry-pick "
              "them onto the current release branch."),
            U("got them back with cherry-pick. how do we stop this happening again?"),
            A("Turn on branch protection for release/*: no force pushes, no deletion, and require a "
              "review before merge. Keep force push allowed on feature branches only."),
            U("protection rule added for release branches"),
        ],
        {"prefix": "reflo", "words": "commits gone branch", "vague": "branch review merge",
         "spread": "release cherry protection"},
    ),
    needle(
        "c-migration-lock", "en", "cli", 25, "Schema migration locks the orders table",
        [
            U("running the migration that adds a column to orders took the site down for four minutes "
              "this morning"),
            A("On your postgres version adding a column with a default is cheap, but the migration also "
              "creates an index, and CREATE INDEX without CONCURRENTLY locks the table against writes "
              "while it builds. Every order request waited on that lock."),
            T("terminal", {"command": "grep -n create_index migrations/0142_order_source.py"},
              "12:    op.create_index('ix_orders_source', 'orders', ['source'])"),
            U("how do I build the index without locking?"),
            A("Use postgresql_concurrently=True in create_index and run that step outside a transaction "
              "(an autocommit block), since CREATE INDEX CONCURRENTLY can't run inside one. Also set a "
              "lock_timeout so a migration gives up instead of queueing behind a long query."),
            U("split the migration, index built concurrently in 6 minutes with no downtime"),
        ],
        {"prefix": "concurren", "words": "column orders site", "vague": "migration index table",
         "spread": "downtime autocommit orders"},
        split_turn=3,
    ),
    needle(
        "c-hourly-logout", "en", "telegram", 45, "Dashboard users logged out every hour",
        [
            U("users of the dashboard get logged out every hour on the dot, even while they're using it"),
            A("An access token that lives an hour and no working refresh would do exactly that. Does the "
              "client call the refresh endpoint before the token expires, and does the response set a "
              "new cookie?"),
            U("the refresh call returns 401 because the refresh cookie has path=/api/auth and the client "
              "calls /auth/refresh through the new proxy"),
            A("So the browser never sends the cookie: its path doesn't match the new route. Set the "
              "cookie path to /auth (or /), or route the proxy so the endpoint keeps its old path."),
            U("changed the cookie path, session survives past the hour now"),
        ],
        {"prefix": "logge", "words": "refresh cookie path", "vague": "token endpoint cookie",
         "spread": "dashboard 401 survives"},
    ),
    needle(
        "c-ci-npm-cache", "en", "discord", 60, "CI build ignores the dependency cache",
        [
            U("our CI build takes 14 minutes again, it used to be 5. the dependency cache step says "
              "restored but npm still downloads everything"),
            A("A restored cache that doesn't help usually means it's restored to the wrong place, or the "
              "key matches an old cache. Which path does the step cache, and what's the key?"),
            U("path ~/.npm, key is the hash of package.json"),
            A("Keying on package.json instead of package-lock.json means the key rarely changes, so you "
              "restore a stale cache from months ago and npm downloads most packages again. Key on the "
              "lockfile hash."),
            U("keyed on the lockfile, build is back to 5 minutes"),
        ],
        {"prefix": "lockf", "words": "cache restored npm", "vague": "build dependency cache",
         "spread": "npm stale keyed"},
    ),
    needle(
        "c-bucket-role", "en", "cli", 100, "Uploads to the media bucket denied after the role change",
        [
            U("since the infra change on monday the worker gets AccessDenied when it writes thumbnails to "
              "the media bucket, reads still work"),
            T("terminal", {"command": "aws sts get-caller-identity"},
              "{\n  \"Arn\": \"arn:aws:sts::123456789012:assumed-role/media-worker-v2/i-0ab12cd34\"\n}",
              say="Which identity does it run as?"),
            A("The worker now runs as media-worker-v2. Its policy probably allows GetObject but not "
              "PutObject, or the bucket policy only trusts the old role. Check both: the IAM policy on "
              "the role and the bucket policy's principal."),
            U("bucket policy lists the old role arn explicitly"),
            A("Add the new role to the bucket policy's principal (or switch the statement to a condition "
              "on the account and a role tag). Then remove the old role once nothing uses it."),
            U("added the v2 role to the bucket policy, uploads work"),
        ],
        {"prefix": "accessd", "words": "bucket policy principal", "vague": "worker role policy",
         "spread": "monday arn uploads"},
    ),
    needle(
        "c-checkout-flag", "en", "discord", 160, "New checkout behind a flag for 10% of customers",
        [
            U("we want to roll out the new checkout to 10% of customers first. what's the safest way "
              "with our flag service?"),
            A("Create a flag with a percentage rollout keyed on the customer id, not the session, so a "
              "customer sees the same checkout on every device. Start at 1% internally, then 10%, and "
              "watch the checkout error rate and conversion on the dashboard."),
            U("what if the new checkout breaks?"),
            A("Turning the flag off is the rollback: no deploy needed. Make sure the old checkout path "
              "still works with orders created by the new one, since some customers will switch "
              "mid-purchase."),
            U("rolled out to 10% on tuesday, error rate flat, going to 50% next week"),
        ],
        {"prefix": "checko", "words": "percentage rollout customer", "vague": "flag rollout dashboard",
         "spread": "safest purchase tuesday"},
    ),
    needle(
        "c-password-rotation", "en", "cli", 200, "Rotating the database password without downtime",
        [
            U("security wants the production database password rotated every 90 days. last time we "
              "rotated it the api was down for ten minutes while pods restarted"),
            A("Use two users instead of one password: create app_user_b with the same grants, point the "
              "secret at it, roll the pods, and only then drop the old user. Connections are never "
              "refused because both users work during the rollout."),
            U("where does the secret come from in the pod?"),
            T("terminal", {"command": "kubectl get deploy api -o jsonpath='{.spec.template.spec.containers[0].envFrom}'"},
              "[{\"secretRef\":{\"name\":\"api-db\"}}]"),
            A("From the api-db secret as environment variables, read once at startup. So changing the "
              "secret alone does nothing until the pods restart; a rolling restart after the switch is enough."),
            U("did the two-user switch with a rolling restart, zero errors"),
        ],
        {"prefix": "rotat", "words": "two users grants", "vague": "password secret pods",
         "spread": "security environment zero"},
    ),
    needle(
        "c-ja-flaky-integration", "ja", "cli", 14, "結合テストがときどき失敗する",
        [
            U("CI で結合テストがときどき失敗します。ローカルでは一度も失敗しません。"),
            A("ログを見ると、失敗するのは毎回テスト用データベースへの接続がタイムアウトしたときです。CI ではテストを "
              "8 並列で走らせていて、データベースの最大接続数 20 を超えています。"),
            U("並列数を減らすしかないですか？"),
            A("コネクションプールの上限をワーカーごとに 2 に絞れば、8 並列でも 16 接続に収まります。あるいはテスト用"
              "データベースの max_connections を上げてもかまいません。"),
            U("プールの上限を 2 にしたら、50 回連続で成功しました"),
        ],
        {"prefix": "結合テ", "words": "最大接続数 並列", "vague": "テスト 失敗 ローカル",
         "spread": "タイムアウト コネクションプール 連続"},
    ),
    needle(
        "c-ja-upload-permission", "ja", "telegram", 230, "デプロイ後のアップロード権限エラー",
        [
            U("新しいサーバーにデプロイしたら、アップロード画面で権限エラーが出ます。前のサーバーでは問題ありませんでした。"),
            A("アップロード先のディレクトリの所有者を確認してください。新しいサーバーではアプリが www-data ではなく "
              "app ユーザーで動いているので、古い所有者のままだと書き込めません。"),
            U("所有者が root になっていました"),
            A("chown で app ユーザーに変更し、デプロイスクリプトにも同じ処理を追加しておくと、次のサーバーでも同じ問題が起きません。"),
            U("スクリプトに chown を追加して、アップロードできるようになりました"),
        ],
        {"prefix": "アップロ", "words": "所有者 root", "vague": "権限 エラー サーバー",
         "spread": "アップロード画面 所有者 追加"},
    ),
    needle(
        "c-ko-notice-cache", "ko", "discord", 280, "공지사항이 캐시 때문에 안 바뀜",
        [
            U("홈페이지 공지사항을 수정했는데 사용자들한테는 예전 내용이 계속 보여요."),
            A("CDN 캐시가 공지사항 페이지를 하루 동안 캐시하도록 설정돼 있어요. 수정해도 캐시가 만료될 때까지는 예전 "
              "페이지가 나갑니다."),
            U("당장 바꾸려면 어떻게 해요?"),
            A("CDN 콘솔에서 해당 경로만 퍼지하면 몇 분 안에 반영돼요. 앞으로는 공지사항 페이지의 캐시 시간을 5분으로 "
              "줄이거나, 게시할 때 자동으로 퍼지하도록 하세요."),
            U("퍼지하니까 바로 바뀌었고, 캐시 시간은 5분으로 줄였어요"),
        ],
        {"prefix": "공지사", "words": "콘솔 퍼지", "vague": "캐시 페이지 설정",
         "spread": "홈페이지 하루 5분"},
    ),
    needle(
        "c-zh-container-dns", "zh", "cli", 350, "容器内访问外部接口超时",
        [
            U("容器里面访问外部接口经常超时，在宿主机上 curl 同一个地址很快。"),
            T("terminal", {"command": "docker exec api cat /etc/resolv.conf"},
              "nameserver 127.0.0.11\noptions ndots:5", say="看一下容器的 DNS 配置。"),
            A("容器的 DNS 配置里 ndots 是 5，域名里点少于 5 个时会先依次拼接搜索域去查询，每次查询失败都要等超时，"
              "所以看起来是网络慢。"),
            U("那要怎么改？"),
            A("在容器的配置里把 ndots 改成 1，或者请求时用完整域名（末尾加点）。这样会直接查询真实域名，不再走搜索域。"),
            U("把 ndots 改成 1 以后，接口响应恢复到 200 毫秒以内"),
        ],
        {"prefix": "宿主", "words": "ndots 搜索域", "vague": "网络 超时 配置",
         "spread": "curl 完整域名 200"},
        split_turn=3,
    ),
]

#: Smaller than the first set: the model's full check (40 needles, every age bucket four
#: times) is for that one; tests/bench/test_relevance_needles_b.py checks this one's spread.
validate(NEEDLES_C, min_needles=24, min_cjk=8)
