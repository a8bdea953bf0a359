"""Chinese, Japanese and Korean needles of the relevance bench (see :mod:`bench.needle_model`).
Hand-written for this bench. Words of a CJK query are separated by spaces, as a person types
them into a search field; each is matched as a substring (trigram index, LIKE)."""

from __future__ import annotations

from .needle_model import A, T, U, needle

CJK = [
    # ----------------------------------------------------------------------- Chinese
    needle(
        "zh-cert-renew", "zh", "cli", 3, "nginx 证书自动续期",
        [
            U("官网服务器的 HTTPS 证书下周就过期了，上次是手动续的。能不能改成自动续期？"),
            A("可以用 acme.sh 申请 Let's Encrypt 证书，它会自己装一个定时任务，每天检查一次，"
              "到期前三十天自动续期，续完以后执行 reload 命令让 nginx 加载新证书。"),
            T("terminal", {"command": "acme.sh --issue -d www.example.cn -w /var/www/html"},
              "[Mon Jan 5 10:12:01 CST 2026] Cert success.\n[Mon Jan 5 10:12:01 CST 2026] Your cert is in /root/.acme.sh/www.example.cn/"),
            U("证书申请成功了。续期以后 nginx 要我自己重启吗？"),
            A("不用。安装证书的时候加上 --reloadcmd \"systemctl reload nginx\"，以后每次续期成功都会自动重载，"
              "网站不会中断。"),
            U("好的，已经配置好了。顺便把过期提醒邮件也关掉吧。"),
        ],
        {"prefix": "自动续", "words": "acme 定时任务", "vague": "服务器 证书 过期",
         "spread": "官网 重载 提醒"},
        split_turn=3,
    ),
    needle(
        "zh-frp-tunnel", "zh", "telegram", 45, "家里 NAS 内网穿透",
        [
            U("家里的群晖 NAS 没有公网 IP，出门在外想访问照片，有什么办法？"),
            A("可以做内网穿透。常见做法是租一台便宜的云服务器跑 frps，NAS 上跑 frpc，"
              "把 5001 端口映射出去。也可以用 Tailscale 这种组网工具，不需要暴露端口，更安全。"),
            U("我不想暴露端口，那就用 Tailscale 吧。群晖上能装吗？"),
            A("能，套件中心里直接搜 Tailscale 就有。装好以后用同一个账号登录手机和 NAS，"
              "手机上打开群晖相册，地址填 NAS 的 100.x 地址就行。"),
            U("装好了，在公司用手机打开相册速度还挺快的。"),
        ],
        {"prefix": "内网穿", "words": "群晖 公网", "vague": "服务器 端口",
         "spread": "frps 套件中心 相册"},
    ),
    needle(
        "zh-parents-checkup", "zh", "whatsapp", 146, "给爸妈预约体检",
        [
            U("帮我给爸妈预约一下年度体检，他们都六十多岁了，想加胃镜和骨密度检查。"),
            A("市第一医院体检中心的老年套餐包含血常规、心电图、腹部彩超，胃镜和骨密度可以加项。"
              "胃镜需要提前一天晚上八点以后禁食。下周六上午还有两个名额。"),
            U("就下周六上午吧，胃镜要无痛的。"),
            A("已经预约好了：下周六上午七点半到体检中心，无痛胃镜需要家属陪同，检查后两小时内不能开车。"),
            U("那我那天开车送他们过去。"),
            A("好的，我在你的日历里加了提醒，周五晚上再提醒他们禁食。"),
        ],
        {"prefix": "骨密", "words": "胃镜 禁食", "vague": "预约 体检 检查",
         "spread": "爸妈 无痛 日历"},
    ),
    needle(
        "zh-mysql-slow", "zh", "cli", 230, "订单表慢查询排查",
        [
            U("订单列表页打开要八秒，后台接口很慢，数据库是 MySQL 8。"),
            T("terminal", {"command": "mysql -e \"EXPLAIN SELECT * FROM orders WHERE user_id = 42 ORDER BY created_at DESC LIMIT 20\""},
              "id  select_type  table   type  key   rows     Extra\n1   SIMPLE       orders  ALL   NULL  3812640  Using where; Using filesort"),
            A("全表扫描了三百八十万行，还用了 filesort。给 orders 加一个 (user_id, created_at) 的联合索引，"
              "这条查询就能直接按索引顺序取前二十条。"),
            U("线上加索引会锁表吗？"),
            A("MySQL 8 的 InnoDB 支持在线 DDL，ALGORITHM=INPLACE, LOCK=NONE 加索引不会阻塞读写，"
              "不过会占一些磁盘和 IO，建议放在凌晨低峰期做。"),
            U("凌晨加好了，列表页现在两百毫秒以内。"),
        ],
        {"prefix": "联合索", "words": "filesort 全表扫描", "vague": "接口 很慢 数据库",
         "spread": "订单 凌晨 毫秒"},
        split_turn=3,
    ),
    needle(
        "zh-move-broadband", "zh", "email", 345, "搬家后宽带迁移",
        [
            U("下个月搬家，家里的宽带能不能直接迁到新地址？"),
            A("电信宽带可以办理移机，需要户主身份证和新地址的门牌号。新小区要先确认有没有电信的光纤覆盖，"
              "如果没有只能先销户再装别家的。"),
            U("新小区只有联通和移动的光纤。"),
            A("那就先预约联通上门安装，等新宽带装好了再去营业厅给电信销户，这样中间不会断网。"
              "电信的光猫要记得还回去，不然会扣押金。"),
            U("联通约了十五号上门，电信那边十六号去销户。"),
        ],
        {"prefix": "移机", "words": "光纤 覆盖", "vague": "宽带 新地址",
         "spread": "搬家 光猫 十六号"},
    ),
    # ----------------------------------------------------------------------- Japanese
    needle(
        "ja-lb-healthcheck", "ja", "slack", 7, "ロードバランサーのヘルスチェック失敗",
        [
            U("新しい API サーバーをロードバランサーに追加したら、ヘルスチェックが失敗し続けています。"),
            A("ヘルスチェックのパスが /healthz になっていますが、新しいアプリは /health で応答しています。"
              "ターゲットグループの設定でパスを合わせるか、アプリ側に /healthz を追加してください。"),
            U("パスを直したのにまだ unhealthy です。"),
            A("セキュリティグループも確認してください。ロードバランサーからの 8080 番ポートへの通信が"
              "許可されていないと、チェック自体が届きません。"),
            U("セキュリティグループに 8080 を追加したら healthy になりました！"),
        ],
        {"prefix": "ヘルスチェ", "words": "ターゲットグループ パス", "vague": "サーバー 追加 失敗",
         "spread": "unhealthy 8080 healthz"},
    ),
    needle(
        "ja-tax-return", "ja", "telegram", 72, "確定申告の医療費控除",
        [
            U("去年は入院したので、確定申告で医療費控除を受けたいです。何が必要ですか？"),
            A("医療費控除は、年間の医療費が十万円を超えた分が対象です。病院の領収書をもとに"
              "医療費控除の明細書を作り、保険金で補填された分は差し引きます。マイナポータル連携を使えば"
              "通院の記録も自動で入ります。"),
            U("高額療養費の払い戻しも差し引くんですか？"),
            A("はい、高額療養費として戻ってきた金額も差し引きます。入院費が四十万円で、払い戻しが"
              "二十五万円なら、対象は十五万円です。"),
            U("e-Tax で提出しました。還付は三週間くらいだそうです。"),
        ],
        {"prefix": "医療費控", "words": "確定申告 入院", "vague": "去年 必要",
         "spread": "領収書 還付 払い戻し"},
    ),
    needle(
        "ja-docker-slim", "ja", "cli", 101, "Docker イメージの軽量化",
        [
            U("Go のアプリの Docker イメージが 1.2GB もあります。デプロイに時間がかかるので小さくしたいです。"),
            A("マルチステージビルドを使いましょう。ビルド用のステージで golang イメージを使ってバイナリを作り、"
              "最終ステージは distroless か scratch にバイナリだけをコピーします。"),
            T("write_file", {"path": "Dockerfile", "content": "FROM golang:1.22 AS build\nWORKDIR /src\nCOPY . .\nRUN CGO_ENABLED=0 go build -o /app ./cmd/server\n\nFROM gcr.io/distroless/static\nCOPY --from=build /app /app\nENTRYPOINT [\"/app\"]\n"},
              "Wrote Dockerfile"),
            U("ビルドできました。でも HTTPS の通信で証明書エラーが出ます。"),
            A("scratch には CA 証明書が入っていないためです。distroless/static には入っているので、"
              "このまま distroless を使えば解決します。"),
            U("distroless にしたらエラーが消えました。イメージは 14MB になりました。"),
        ],
        {"prefix": "マルチステー", "words": "イメージ デプロイ", "vague": "アプリ 時間 小さく",
         "spread": "証明書エラー 14mb golang"},
        split_turn=3,
    ),
    needle(
        "ja-moving-juminhyo", "ja", "email", 188, "引っ越しの手続きリスト",
        [
            U("来月、横浜から福岡に引っ越します。役所の手続きを忘れないようにリストにしてください。"),
            A("転出届は横浜市の区役所で引っ越しの二週間前から出せます。福岡に着いたら十四日以内に"
              "転入届を出し、同時にマイナンバーカードの住所変更と国民健康保険の加入をします。"),
            U("運転免許の住所変更もありますよね。"),
            A("はい、運転免許は福岡の警察署か運転免許試験場で、新しい住民票を持って行けば変更できます。"
              "郵便局の転送届はネットで出せます。"),
            U("リストを印刷して冷蔵庫に貼りました。"),
        ],
        {"prefix": "転入", "words": "転出届 区役所", "vague": "手続き 忘れない",
         "spread": "福岡 転送届 冷蔵庫"},
    ),
    needle(
        "ja-cron-timezone", "ja", "cli", 285, "cron の実行時刻が九時間ずれる",
        [
            U("毎朝七時にレポートを送る cron ジョブが、なぜか夕方四時に実行されています。"),
            T("terminal", {"command": "timedatectl"},
              "               Local time: Tue 2025-03-18 07:02:11 UTC\n                Time zone: Etc/UTC (UTC, +0000)"),
            A("サーバーのタイムゾーンが UTC なので、cron の「七時」は日本時間の十六時です。"
              "crontab の先頭に CRON_TZ=Asia/Tokyo を書くか、サーバー自体を Asia/Tokyo にしてください。"),
            U("ほかのジョブに影響が出ないように CRON_TZ にします。"),
            A("それが安全です。設定したら、次の実行時刻をログで確認しておきましょう。"),
            U("今朝は七時ちょうどにレポートが届きました。"),
        ],
        {"prefix": "タイムゾー", "words": "cron レポート", "vague": "サーバー 時間",
         "spread": "夕方 asia 届きました"},
    ),
    # ----------------------------------------------------------------------- Korean
    needle(
        "ko-cert-expiry", "ko", "discord", 20, "운영 서버 인증서 만료 장애",
        [
            U("오늘 아침부터 결제 페이지에 접속하면 인증서 오류가 떠요. 운영 서버 인증서가 만료된 것 같아요. 확인 부탁드려요."),
            A("와일드카드 인증서가 어제 자정에 만료됐습니다. 갱신 스크립트가 실패했는데, DNS 인증에 쓰는 "
              "API 토큰이 지난달에 폐기돼서 그렇습니다."),
            U("새 토큰 발급했어요. 바로 갱신해 주세요."),
            T("terminal", {"command": "certbot renew --cert-name example.kr --force-renewal"},
              "Congratulations, all renewals succeeded:\n  /etc/letsencrypt/live/example.kr/fullchain.pem (success)"),
            A("갱신했고 로드밸런서에도 새 인증서를 올렸습니다. 결제 페이지 정상입니다. 만료 14일 전에 "
              "알림이 오도록 모니터링도 추가할게요."),
            U("감사합니다. 장애 보고서에 토큰 폐기 건도 적어 둘게요."),
        ],
        {"prefix": "와일드카", "words": "인증서 만료", "vague": "서버 오류 확인",
         "spread": "결제 폐기 알림"},
    ),
    needle(
        "ko-cat-vet", "ko", "whatsapp", 29, "고양이 예방접종 예약",
        [
            U("우리 고양이 나비가 예방접종 맞을 때가 됐는데, 토요일에 여는 동물병원 찾아줄래?"),
            A("집 근처에 토요일 진료하는 곳이 두 군데 있어요. 행복동물병원은 오후 다섯 시까지, "
              "하늘동물의료센터는 24시간이에요. 종합백신이랑 광견병 접종 둘 다 가능해요."),
            U("행복동물병원으로 토요일 오전에 예약해줘."),
            A("토요일 오전 열 시 반으로 예약했어요. 접종 전날에는 목욕시키지 말라고 하네요."),
            U("알겠어. 이동장도 미리 꺼내 둬야겠다."),
        ],
        {"prefix": "예방접", "words": "고양이 동물병원", "vague": "토요일 찾아",
         "spread": "나비 목욕 이동장"},
    ),
    needle(
        "ko-jeju-trip", "ko", "telegram", 89, "제주도 가족 여행 일정",
        [
            U("다음 달에 부모님 모시고 제주도 3박 4일 여행 가려고 해. 일정 좀 짜줘."),
            A("첫째 날은 공항 근처 용두암과 동문시장, 둘째 날은 성산일출봉과 섭지코지, 셋째 날은 "
              "서귀포 쪽 천지연폭포와 올레시장, 마지막 날은 한림공원 들렀다가 공항으로 가면 무리가 없어요."),
            U("렌터카는 어디서 빌리는 게 좋아?"),
            A("공항 렌터카 하우스에서 픽업하는 업체가 편해요. 부모님이 계시니 완전자차 보험을 꼭 넣으세요. "
              "큰 짐이 있으면 중형 SUV를 추천해요."),
            U("중형 SUV로 완전자차 넣어서 예약해줘."),
            A("예약했어요. 첫날 오전 열한 시 픽업, 마지막 날 오후 네 시 반납입니다."),
        ],
        {"prefix": "성산일", "words": "제주도 일정", "vague": "부모님 여행",
         "spread": "동문시장 완전자차 반납"},
        split_turn=2,
    ),
    needle(
        "ko-db-restore", "ko", "cli", 172, "데이터베이스 백업 복구 연습",
        [
            U("데이터베이스 백업은 매일 받고 있는데, 실제로 복구해 본 적이 없어요. 복구 연습을 하고 싶어요."),
            A("좋은 생각이에요. 스테이징에 빈 인스턴스를 띄우고 어제 덤프를 pg_restore로 복구한 다음, "
              "주요 테이블 행 수를 운영과 비교해 보세요. 걸린 시간도 기록해 두면 장애 때 도움이 돼요."),
            T("terminal", {"command": "time pg_restore -d app_restore -j 4 /backups/app-20250611.dump"},
              "real\t41m12.301s\nuser\t6m02.110s\nsys\t1m11.842s"),
            U("복구에 41분 걸렸어요. 생각보다 오래 걸리네요."),
            A("병렬 작업 수를 늘리면 줄일 수 있지만, 목표 복구 시간이 30분이라면 WAL 아카이빙으로 "
              "시점 복구를 준비하는 것이 더 확실해요."),
            U("다음 분기에 WAL 아카이빙을 도입하는 걸로 팀에 공유할게요."),
        ],
        {"prefix": "아카이", "words": "복구 연습", "vague": "데이터베이스 백업 매일",
         "spread": "스테이징 41분 분기"},
        split_turn=3,
    ),
]
