"""A second, held-out needle set for the relevance bench: :data:`NEEDLES_B`.

Written independently of the first set (:mod:`bench.needles`): by someone who read neither the
ranking code nor the first set's queries (beyond two needles, to learn the format), on topics
the first set does not cover. Each conversation and its four queries were written before the
bench ran on them, and measured once; nothing here was changed to suit what the ranking finds.
Its purpose is an estimate of how the browser's search does on conversations it was not tuned
on (``python -m bench.relevance --needles b``).

The format and rules are :mod:`bench.needle_model`'s. CJK words of a query are separated by
spaces, as a person types them; each is matched as a substring.
"""

from __future__ import annotations

from .needle_model import A, T, U, Needle, needle, validate

EN_B = [
    needle(
        "b-kafka-rebalance", "en", "cli", 1, "Kafka consumers stuck rebalancing",
        [
            U("our order-events consumer group keeps rebalancing every few minutes and lag is climbing "
              "past 2 million. what's going on?"),
            T("terminal", {"command": "kafka-consumer-groups.sh --bootstrap-server kafka-1:9092 --describe --group order-events"},
              "GROUP         TOPIC      PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG\n"
              "order-events  orders.v2  0          88213411        89104772        891361\n"
              "order-events  orders.v2  1          87990120        88871554        881434",
              say="Let me look at the group."),
            A("Lag on every partition, and the member list changes between calls. The usual cause: a "
              "handler takes longer than max.poll.interval.ms (5 minutes by default), the Kafka broker "
              "decides the consumer died and kicks it out, and that triggers a rebalance for everyone. "
              "Are you doing slow work per batch, like HTTP calls?"),
            U("yes each message calls the fraud scoring service, and it got slower last week"),
            A("Then either shrink max.poll.records so a batch finishes in time, or raise "
              "max.poll.interval.ms. Switching to the cooperative-sticky assignor also stops the whole "
              "group from pausing on every rebalance."),
            U("set max.poll.records to 50 and cooperative sticky, lag is draining now"),
        ],
        {"prefix": "rebalan", "words": "consumer lag climbing", "vague": "slow work batch",
         "spread": "kafka fraud draining"},
    ),
    needle(
        "b-numpy-wheels", "en", "cli", 3, "numpy won't install on the M2 laptop",
        [
            U("pip install -r requirements.txt fails on my new M2 laptop, it tries to compile numpy from "
              "source and dies with a clang error"),
            T("terminal", {"command": "python3 -c 'import platform; print(platform.machine(), platform.python_version())'"},
              "x86_64 3.13.0", say="First, which Python is this?"),
            A("Your python reports x86_64: it's an Intel build running under Rosetta, and the numpy 1.24 "
              "pinned in requirements has no wheel for Python 3.13, so pip falls back to building from "
              "source. Install the arm64 Python from python.org or via Homebrew, and bump numpy to a "
              "release that ships 3.13 wheels."),
            U("installed python 3.12 arm64 via homebrew, recreated the venv"),
            A("Good, 3.12 has wheels for everything in your list. `pip debug --verbose | head` should "
              "show macosx arm64 tags."),
            U("all installed in 20 seconds, no compiler needed"),
        ],
        {"prefix": "roset", "words": "numpy source clang", "vague": "install fails new laptop",
         "spread": "numpy homebrew compiler"},
    ),
    needle(
        "b-cronjob-twice", "en", "cli", 8, "Nightly report CronJob ran twice",
        [
            U("the nightly-report CronJob in k8s sent the finance email twice last night. it only has "
              "schedule 0 2 * * *"),
            T("terminal", {"command": "kubectl describe job nightly-report-28711320 -n reports"},
              "Pods Statuses:  0 Active / 1 Succeeded / 1 Failed\nEvents:\n"
              "  Normal   SuccessfulCreate  pod/nightly-report-28711320-7kq2p\n"
              "  Warning  Evicted           node ip-10-2-3-44 was drained\n"
              "  Normal   SuccessfulCreate  pod/nightly-report-28711320-m9x4d",
              say="Looking at last night's job."),
            A("The first pod was evicted when the node was drained during a cluster autoscaler "
              "scale-down, after it had already sent the email. The Job then created a second pod, "
              "which started from scratch and sent it again. Kubernetes only promises at-least-once here."),
            U("ok so how do I stop the duplicate email"),
            A("Two things: annotate the pod so the autoscaler leaves it alone while it runs, and make "
              "the report idempotent: write a marker row for the date before sending and skip if it "
              "is already there."),
            U("added the annotation and a sent_reports table keyed by date. will watch tonight"),
        ],
        {"prefix": "autosca", "words": "duplicate email", "vague": "email sent twice",
         "spread": "cronjob drained marker"},
        split_turn=3,
    ),
    needle(
        "b-fiddle-leaf", "en", "telegram", 12, "Fiddle leaf fig dropping leaves",
        [
            U("my fiddle leaf fig has brown spots on the lower leaves and dropped three of them this week"),
            A("Brown spots that start at the edges and low on the plant usually mean the roots stay wet "
              "too long. How often do you water it, and does the pot have drainage holes?"),
            U("every sunday a full glass, and it's in a decorative pot without holes"),
            A("That's the likely culprit: water collects at the bottom and the roots rot. Move it to a "
              "nursery pot with holes inside the decorative one, water only when the top 5 cm of soil "
              "is dry, and keep it in bright indirect light near the window."),
            U("repotted it, roots looked mushy in one corner, cut those off"),
            A("Good call. Expect it to sulk for a couple of weeks; new leaves at the top are the sign "
              "it's recovering."),
        ],
        {"prefix": "fidd", "words": "brown spots leaves", "vague": "water roots rot",
         "spread": "fig sunday mushy"},
    ),
    needle(
        "b-wedding-seating", "en", "whatsapp", 19, "Seating chart for Priya's wedding",
        [
            U("help me with the seating chart for Priya's wedding: 86 guests, tables of 10, and uncle "
              "Ravi can't sit near aunt Meena"),
            A("Nine tables then, one of them with 6. Start with the fixed groups: the head table, both "
              "families, the college friends, the work friends. Put Ravi with Priya's cousins on table 2 "
              "and Meena with the neighbours on table 8, on opposite sides of the dance floor."),
            U("the kids: there are 11 under twelve, should they get their own table?"),
            A("A kids table works if it's close to their parents and away from the speakers. 11 is a "
              "full table plus one; seat the oldest with their parents."),
            U("perfect, sending the chart to the venue tomorrow"),
        ],
        {"prefix": "seati", "words": "kids table parents", "vague": "wedding guests tables",
         "spread": "ravi kids venue"},
    ),
    needle(
        "b-bastion-jump", "en", "cli", 26, "ssh through the bastion to the private replica",
        [
            U("I need to reach db-replica-3 in the private subnet from my laptop. it only accepts ssh "
              "from the bastion. what's the cleanest way?"),
            A("Use ProxyJump instead of copying keys to the bastion. In ~/.ssh/config add a Host block "
              "for the bastion and one for the replica with ProxyJump bastion. Your key never leaves "
              "your laptop."),
            T("terminal", {"command": "ssh -J ops@bastion.internal ubuntu@10.40.7.12 hostname"},
              "channel 0: open failed: administratively prohibited: open failed\n"
              "stdio forwarding failed\nConnection closed by UNKNOWN port 65535",
              say="Trying the jump directly."),
            A("administratively prohibited means the bastion's sshd has AllowTcpForwarding no. "
              "ProxyJump needs TCP forwarding on the jump host; ask whoever owns the bastion to allow "
              "it for your user with a Match block."),
            U("platform team enabled it for the ops group, jump works now"),
        ],
        {"prefix": "bastio", "words": "private subnet ssh", "vague": "ssh from laptop",
         "spread": "replica prohibited platform"},
    ),
    needle(
        "b-tire-pressure", "en", "telegram", 7, "Tire pressure light after the winter tire swap",
        [
            U("got the winter tires put on yesterday and now the tire pressure warning light is on. "
              "pressures look fine on the gauge"),
            A("If the pressures are right, the light is probably about the sensors, not the air. Do the "
              "winter wheels have their own TPMS sensors, or were the tires mounted on new rims?"),
            U("they're on separate steel rims I bought used"),
            A("Then either the rims have no sensors, or the car still listens for the summer set's IDs. "
              "Most tire shops can program or relearn the sensors in ten minutes; if the steel rims "
              "have none, the light will stay on all winter."),
            U("shop relearned them, light went off on the drive home"),
        ],
        {"prefix": "tpm", "words": "warning light tires", "vague": "sensors car light",
         "spread": "winter steel relearned"},
    ),
    needle(
        "b-hydration-dates", "en", "cli", 40, "Hydration mismatch on the order history page",
        [
            U("next.js keeps warning 'Text content does not match server-rendered HTML' on the order "
              "history page, only for some users"),
            T("read_file", {"path": "app/orders/OrderRow.tsx"},
              "export function OrderRow({ order }) {\n  return <td>{new Date(order.placedAt).toLocaleString()}</td>\n}",
              say="Looking at the row component."),
            A("toLocaleString formats with the machine's timezone and locale. The server renders in UTC "
              "with en-US, the browser in the user's zone, so users outside UTC get different text and "
              "React complains with a hydration error. Format on the server with an explicit timeZone, "
              "or render the date in a client component after mount."),
            U("we want local time for the user. client component it is"),
            A("Then wrap the date in a small client component that renders an ISO fallback and fills "
              "in the local string in useEffect; suppressHydrationWarning on that one element is fine too."),
            U("done, warnings gone from sentry"),
        ],
        {"prefix": "hydrat", "words": "timezone locale server", "vague": "local time user",
         "spread": "order useeffect sentry"},
    ),
    needle(
        "b-interview-prep", "en", "discord", 48, "Practicing a system design interview",
        [
            U("I have a system design interview at a payments company on thursday. can you quiz me? "
              "start with designing a URL shortener"),
            A("Sure. First question: how many new short links per day, and how many redirects? Write "
              "down your estimates before we talk about storage."),
            U("say 100 million new links a day, 10x reads. base62 ids from a counter, stored in a key "
              "value store, cache in front"),
            A("Good start. Where does the counter live, and what happens when that node dies? "
              "Interviewers at payments companies will push on consistency and idempotency, so be ready "
              "to talk about retries too."),
            U("pre-allocated ranges per app server, so a crash only loses a range"),
            A("That's the answer they want. Next round tomorrow: design a rate limiter."),
        ],
        {"prefix": "shorten", "words": "base62 counter cache", "vague": "design interview company",
         "spread": "payments ranges limiter"},
    ),
    needle(
        "b-appstore-reject", "en", "cli", 61, "App Store rejected the build over Sign in with Apple",
        [
            U("App Store review rejected build 2.4.1 under guideline 4.8. we only offer Google and "
              "email login"),
            A("4.8 says an app that offers a third-party login must also offer an equivalent "
              "privacy-friendly option, in practice Sign in with Apple. Email login alone doesn't count "
              "since Google is there. You'll need to add Apple as a provider."),
            T("terminal", {"command": "grep -rn GoogleSignIn ios/Runner --include=*.swift"},
              "ios/Runner/AuthCoordinator.swift:14:import GoogleSignIn\n"
              "ios/Runner/AuthCoordinator.swift:88:        GIDSignIn.sharedInstance.signIn(withPresenting: root)",
              say="Where is the login wired up?"),
            U("we use firebase auth on the backend, does Apple login work with it?"),
            A("Yes, Firebase supports the Apple provider. Enable it in the console, add the capability "
              "in Xcode, and pass the nonce hash in the request. Apple may hide the user's email behind "
              "a relay address."),
            U("resubmitted 2.4.2 with the apple button, approved in a day"),
        ],
        {"prefix": "guidel", "words": "firebase apple provider", "vague": "review rejected login",
         "spread": "google nonce approved"},
        split_turn=3,
    ),
    needle(
        "b-pihole-tv", "en", "discord", 77, "Pi-hole breaks the smart TV apps",
        [
            U("since I set up pi-hole the netflix app on the living room TV says 'unable to connect' "
              "but phones are fine"),
            A("Smart TVs often hardcode a tracking or config domain and refuse to start when it's "
              "blocked. Open the query log, filter by the TV's IP, and launch the app: look for blocked "
              "domains in that minute."),
            U("I see a bunch of blocked samsungads and nflxso stuff"),
            A("nflxso.net is Netflix's own CDN; something in your blocklists is too aggressive. "
              "Whitelist it. The Samsung ad domains you can keep blocked, though some apps check them; "
              "whitelist one at a time."),
            U("whitelisted nflxso.net and the app works, ads still blocked"),
        ],
        {"prefix": "whitelis", "words": "query log blocked", "vague": "app unable connect",
         "spread": "netflix samsungads whitelisted"},
    ),
    needle(
        "b-meal-prep", "en", "whatsapp", 93, "High-protein meal prep for the week",
        [
            U("I want to meal prep lunches for 5 days, around 40 g protein each, under 600 calories, "
              "and I hate tuna"),
            A("Here's a plan: chicken thighs with rice and roasted broccoli on Monday and Tuesday, a "
              "lentil and turkey chili Wednesday and Thursday, and Greek yogurt bowls with cottage "
              "cheese for Friday. All around 550-590 calories."),
            U("can the chili be frozen?"),
            A("Yes, chili freezes very well for up to three months. Cool it fully, portion into "
              "containers, and thaw in the fridge overnight. Keep the rice separate though, it goes mushy."),
            U("great, shopping list please"),
            A("Chicken thighs 1 kg, rice 500 g, broccoli 2 heads, red lentils 400 g, ground turkey "
              "500 g, canned tomatoes 2, Greek yogurt 1 kg, cottage cheese 500 g."),
        ],
        {"prefix": "lenti", "words": "chili freezes months", "vague": "lunches protein calories",
         "spread": "tuna turkey shopping"},
    ),
    needle(
        "b-go-replace", "en", "cli", 118, "Pointing a Go module at our fork",
        [
            U("upstream of go-retryablehttp hasn't merged our fix for the Retry-After parsing. how do I "
              "build against our fork without renaming imports?"),
            A("Use a replace directive in go.mod: replace github.com/hashicorp/go-retryablehttp => "
              "github.com/acme/go-retryablehttp v0.7.8-acme.1. Imports stay the same; only the main "
              "module's replace counts, so libraries that depend on you won't see it."),
            T("terminal", {"command": "go mod tidy && go build ./..."},
              "go: github.com/acme/go-retryablehttp@v0.7.8-acme.1: invalid version: unknown revision v0.7.8-acme.1",
              say="Tidying."),
            A("The tag doesn't exist in the fork yet. Push the tag, or use a pseudo-version: "
              "`go get github.com/acme/go-retryablehttp@<commit>` prints it for you."),
            U("pushed the tag, builds now. I'll leave a TODO to drop the replace when upstream merges"),
        ],
        {"prefix": "retryab", "words": "replace directive imports", "vague": "build against fork",
         "spread": "parsing pseudo todo"},
    ),
    needle(
        "b-trampoline-party", "en", "telegram", 134, "Leo's birthday at the trampoline park",
        [
            U("Leo turns 7 on the 14th and wants a birthday party at the trampoline park. 12 kids. "
              "what do I need to sort out?"),
            A("Book the party slot early, weekends go fast. Most parks need a signed waiver for every "
              "child before they jump, and grip socks. Ask if food is included or if you can bring the cake."),
            U("the park's package is 90 minutes jumping plus 45 in the party room, pizza included, 24 per child"),
            A("That's about 290 for 12 kids. Send the invitations with the waiver link so parents sign "
              "it beforehand; it saves 20 minutes at the door."),
            U("two parents asked about allergies, one kid is gluten free"),
            A("Ask the park for a gluten-free pizza, most can do it with notice, and keep that child's "
              "slice separate. For the cake, a flourless chocolate cake works for everyone."),
            U("ordered the flourless cake, park confirmed the pizza"),
        ],
        {"prefix": "trampol", "words": "waiver invitations parents", "vague": "birthday party kids",
         "spread": "leo gluten flourless"},
        split_turn=4,
    ),
    needle(
        "b-heat-pump", "en", "email", 160, "Heat pump bill doubled in January",
        [
            U("Our electricity bill for January was 412 euros, double December. The heat pump is set to "
              "22 degrees all day. Is something wrong with it?"),
            A("Probably not broken: January was much colder, and a heat pump's efficiency drops as the "
              "outside temperature falls. But a few settings matter. Is the backup electric heater (the "
              "auxiliary heat) turning on? That alone can double the bill."),
            U("The display shows 'AUX' quite often in the mornings."),
            A("That's it. The auxiliary heater kicks in when you ask for a big jump quickly, for example "
              "after a night setback. Lower the setback to 1-2 degrees, or none, and raise the balance "
              "point so the heater only runs below -7."),
            U("Changed it with the installer on the phone. Will compare the next bill."),
        ],
        {"prefix": "auxil", "words": "electricity bill january", "vague": "heat pump settings",
         "spread": "euros setback installer"},
    ),
    needle(
        "b-suspend-drain", "en", "cli", 201, "Laptop battery drains while suspended",
        [
            U("my ThinkPad X1 battery loses 30% overnight while suspended on Fedora. under windows it lost 2%"),
            T("terminal", {"command": "cat /sys/power/mem_sleep"}, "[s2idle] deep",
              say="Checking the suspend mode."),
            A("It's using s2idle, the modern standby mode, which keeps much of the platform awake. Your "
              "firmware also offers deep (S3). Try `echo deep | sudo tee /sys/power/mem_sleep` and "
              "suspend overnight to compare."),
            U("deep lost 3% overnight. how do I make it permanent?"),
            A("Add mem_sleep_default=deep to the kernel command line with grubby --update-kernel=ALL "
              "--args='mem_sleep_default=deep', then reboot. Waking from deep takes a couple of seconds longer."),
            U("done, worth the extra two seconds"),
        ],
        {"prefix": "s2idl", "words": "thinkpad overnight suspended", "vague": "battery loses overnight",
         "spread": "fedora deep reboot"},
    ),
    needle(
        "b-invoice-overdue", "en", "email", 222, "Chasing the overdue Hartwell invoice",
        [
            U("Hartwell Studio still hasn't paid invoice 2024-031 for the website redesign, it's 45 days "
              "overdue. Can you draft a polite but firm reminder?"),
            A("Draft:\n\nSubject: Invoice 2024-031, now 45 days overdue\n\nHi Claire, I hope the launch "
              "is going well. My records show invoice 2024-031 (4,800 EUR, due 14 March) is still open. "
              "Could you let me know when I can expect payment? I've attached the invoice again for "
              "convenience. Per our contract, late payments accrue 1% interest per month from day 60.\n\n"
              "Best, Sam"),
            U("Should I mention the interest? I don't want to sour the relationship"),
            A("Mentioning it as a fact from the contract is fine and usually speeds things up. If you'd "
              "rather keep it softer, drop that sentence now and bring it up only in a second reminder."),
            U("Sent it without the interest line. Claire replied they'll pay Friday"),
        ],
        {"prefix": "hartwe", "words": "polite firm reminder", "vague": "late payment contract",
         "spread": "redesign interest friday"},
    ),
    needle(
        "b-ansible-handler", "en", "cli", 257, "Ansible handler never reloads haproxy",
        [
            U("I changed haproxy.cfg through our ansible role and the task says changed, but haproxy is "
              "still serving the old backends. the handler never ran"),
            T("terminal", {"command": "ansible-playbook site.yml -l lb-01 --diff"},
              "TASK [haproxy : render config] ***\nchanged: [lb-01]\n"
              "TASK [haproxy : validate config] ***\nfatal: [lb-01]: FAILED! => {\"rc\": 1}\n"
              "PLAY RECAP ***\nlb-01 : ok=7 changed=1 failed=1",
              say="Running it with diff."),
            A("A later task failed in the same play, so the play stopped before handlers ran; handlers "
              "run at the end of the play unless something flushes them. On the next run the template "
              "is already in place, nothing reports changed, and the handler is never notified again."),
            U("so how do I make sure it reloads"),
            A("Add force_handlers: true to the play, or run with --force-handlers, so notified handlers "
              "run even after a failure. And validate before writing: the template module's validate "
              "option runs `haproxy -c -f %s` on the temporary file, so a bad config never lands."),
            U("used validate on the template and force_handlers, reloads every time now"),
        ],
        {"prefix": "haprox", "words": "handler never ran", "vague": "still serving old",
         "spread": "ansible haproxy force"},
        split_turn=3,
    ),
    needle(
        "b-barre-chords", "en", "signal", 301, "Learning barre chords on guitar",
        [
            U("three weeks into guitar and the F barre chord just buzzes. my index finger hurts. am I "
              "doing it wrong?"),
            A("Almost everyone struggles with F. Roll the index finger slightly onto its bony side, keep "
              "it just behind the fret, and pull with your arm rather than squeezing with the thumb. Also "
              "check the action: a cheap guitar with high strings makes barre chords much harder."),
            U("my teacher said the action is high, the shop can lower it for 30"),
            A("Worth it. Meanwhile practise the mini F on the top four strings, then add the barre one "
              "string at a time."),
            U("had the setup done, F rings on 5 of 6 strings now"),
        ],
        {"prefix": "barr", "words": "index finger buzzes", "vague": "guitar strings harder",
         "spread": "teacher setup thumb"},
    ),
    needle(
        "b-mail-migration", "en", "cli", 339, "Moving the mail domain to Fastmail",
        [
            U("we're moving example-co.de mail from the old cpanel host to Fastmail this weekend. what "
              "order should I change DNS records in so we don't lose mail?"),
            A("Lower the TTL on the MX records to 300 a day ahead. Add Fastmail's SPF include and DKIM "
              "CNAMEs first, they don't affect delivery. Then switch MX, and keep the old mailbox alive "
              "for a few days to catch stragglers from resolvers that cached the old MX."),
            T("terminal", {"command": "dig +short MX example-co.de"}, "10 mail.oldhost-cpanel.net.",
              say="Current MX:"),
            U("switched MX saturday morning. anything else?"),
            A("Add a DMARC record with p=none and a rua address so you see reports, then tighten to "
              "quarantine after a couple of weeks of clean reports. And migrate the old mailboxes with "
              "Fastmail's IMAP import."),
            U("import done, dmarc reports look clean"),
        ],
        {"prefix": "fastm", "words": "dkim spf records", "vague": "change dns records",
         "spread": "cpanel dmarc import"},
    ),
    needle(
        "b-chess-repertoire", "en", "discord", 356, "Building a chess opening repertoire",
        [
            U("I'm 1400 on lichess and lose most games as black against e4 before move 15. what opening "
              "should I learn?"),
            A("At 1400 the Caro-Kann is a good choice: solid structure, fewer sharp forcing lines to "
              "memorise than the Sicilian. Learn the main ideas of the Advance and Exchange variations "
              "first, not long move orders."),
            U("what about against d4?"),
            A("Pair it with the Slav: the same light-squared bishop ideas as the Caro-Kann, so the plans "
              "carry over."),
            U("played 30 games with the caro, rating went up 80"),
        ],
        {"prefix": "lich", "words": "advance exchange variations", "vague": "black lose games",
         "spread": "sicilian slav rating"},
    ),
]

CJK_B = [
    # ----------------------------------------------------------------------- Chinese
    needle(
        "b-zh-crawler-ban", "zh", "cli", 5, "爬虫被目标网站封 IP",
        [
            U("我写的 Python 爬虫跑了两个小时就开始全部返回 403，是不是 IP 被封了？"),
            T("terminal", {"command": "curl -sI 'https://shop.example.cn/list?page=1'"},
              "HTTP/2 403\nserver: cloudflare\ncf-ray: 8a1b2c3d4e5f6a7b-HKG", say="先看一下响应头。"),
            A("响应头里有 cloudflare，说明对方用了 Cloudflare 的防护。你的请求频率太高、User-Agent 又是 "
              "python-requests 的默认值，很容易被判定为机器人。建议把并发降到 2，每个请求之间随机等待 1 到 3 秒，"
              "并且设置正常的浏览器 User-Agent。"),
            U("对方有公开的 API 吗？我只要商品价格"),
            A("可以先看看网站的 robots.txt 和开发者页面。如果有开放接口，用接口比抓网页稳定得多，也不容易违反服务条款。"),
            U("找到了价格接口，每天抓一次就够了，不再被封"),
        ],
        {"prefix": "爬虫", "words": "cloudflare 防护 频率", "vague": "接口 稳定",
         "spread": "403 价格 随机"},
    ),
    needle(
        "b-zh-kindergarten", "zh", "telegram", 60, "幼儿园报名材料准备",
        [
            U("女儿明年九月上幼儿园，街道说下个月开始网上报名，需要准备哪些材料？"),
            A("一般需要：户口本、房产证或租房备案证明、孩子的出生证明、预防接种证，以及父母的身份证。"
              "公办园通常按学区划片，先确认你家属于哪个片区。"),
            U("我们是租房，租房备案还没办"),
            A("租房备案要去房子所在街道的住房服务中心办理，带上租房合同、房东的房产证复印件和身份证。"
              "一般当场或三个工作日内出证明，报名前一定要办好。"),
            U("备案办好了，报名也提交了，等审核结果"),
        ],
        {"prefix": "幼儿园", "words": "租房 备案 合同", "vague": "准备 材料",
         "spread": "女儿 学区 审核"},
    ),
    needle(
        "b-zh-bundle-size", "zh", "cli", 130, "后台管理系统打包体积太大",
        [
            U("我们后台管理系统的 webpack 打包后 main.js 有 8MB，首页白屏要五六秒，怎么排查？"),
            T("terminal", {"command": "npx webpack-bundle-analyzer dist/stats.json"},
              "Webpack Bundle Analyzer is started at http://127.0.0.1:8888\n"
              "Largest modules: moment/locale (2.1 MB), echarts (1.4 MB), lodash (530 KB)",
              say="先用分析工具看一下。"),
            A("最大的是 moment 的所有语言包、完整引入的 echarts 和整个 lodash。可以用 IgnorePlugin 去掉 moment 的 "
              "locale，或者直接换成 dayjs；echarts 改为按需引入；lodash 换成 lodash-es 让 tree shaking 生效。"),
            U("路由能不能也拆开？很多页面平时根本没人用"),
            A("可以，路由组件改成动态 import()，每个页面单独成一个 chunk，访问时才加载。再配合 splitChunks "
              "把第三方库单独打包，浏览器能长期缓存。"),
            U("改完首屏 JS 只有 900KB 了，白屏不到一秒"),
        ],
        {"prefix": "白屏", "words": "echarts 按需", "vague": "页面 加载 缓存",
         "spread": "webpack dayjs 路由"},
        split_turn=3,
    ),
    needle(
        "b-zh-water-heater", "zh", "whatsapp", 270, "新房热水器怎么选",
        [
            U("新房装修到水电阶段了，师傅问热水器用燃气的还是电的，家里三口人，两个卫生间"),
            A("两个卫生间同时用水，推荐燃气热水器，选 16 升或以上、带零冷水功能的。电热水器需要提前加热，"
              "60 升的容量洗两个人就不够了，而且占地方。"),
            U("零冷水要不要单独布回水管？"),
            A("有回水管效果最好，一开就是热水；没有预留回水管的话也能用，但要靠冷水管回流，等待时间长一点。"
              "趁现在水电还没封槽，建议让师傅把回水管布上。"),
            U("已经让师傅加了回水管，买了 16 升的燃气款"),
        ],
        {"prefix": "热水器", "words": "回水管 封槽", "vague": "卫生间 同时 用水",
         "spread": "三口人 零冷水 燃气"},
    ),
    # ----------------------------------------------------------------------- Japanese
    needle(
        "b-ja-presentation", "ja", "discord", 15, "英語でのプレゼン練習",
        [
            U("来週シンガポールの学会で15分の英語プレゼンがあります。質疑応答が一番不安です。練習に付き合ってもらえますか？"),
            A("もちろんです。まず発表の要旨を英語で3文にまとめて送ってください。そのあと、聴衆が聞きそうな質問を"
              "5つ出すので、英語で答えてみましょう。"),
            U("聞き取れなかった時の言い方も知りたいです"),
            A("\"Sorry, could you rephrase the question?\" や \"Just to make sure I understand, you're asking "
              "about ...?\" が便利です。聞き返すのは失礼ではなく、むしろ丁寧な印象になります。"),
            U("本番で rephrase を二回使いました。なんとか乗り切れました"),
        ],
        {"prefix": "質疑応答", "words": "聞き返す 丁寧", "vague": "英語 質問 答え",
         "spread": "学会 rephrase 乗り切れ"},
    ),
    needle(
        "b-ja-rebase-conflict", "ja", "cli", 115, "rebase 中のコンフリクト解消",
        [
            U("feature ブランチを main に rebase したら package-lock.json でコンフリクトが大量に出ました。"
              "どう解消すればいいですか？"),
            T("terminal", {"command": "git status --short"},
              "UU package-lock.json\nUU src/api/client.ts\nM  src/pages/Settings.tsx", say="状況を確認します。"),
            A("package-lock.json は手で直さないほうが安全です。main 側を採用して（rebase 中は --ours が main 側なので注意）、"
              "そのあと npm install で作り直してください。client.ts は中身を見て手動で解消します。"),
            U("ours と theirs が逆になるのはなぜですか？"),
            A("rebase は main の先端にあなたのコミットを一つずつ積み直す操作なので、作業中の HEAD は main 側になります。"
              "そのため ours が main、theirs があなたのコミットです。merge の時と逆なので混乱しやすいところです。"),
            U("理解しました。lock ファイルを作り直して rebase --continue で完了しました"),
        ],
        {"prefix": "コンフリ", "words": "ours theirs 逆", "vague": "コミット 作業中",
         "spread": "ブランチ npm 混乱"},
        split_turn=3,
    ),
    needle(
        "b-ja-tomato", "ja", "telegram", 250, "ベランダのミニトマトの病気",
        [
            U("ベランダで育てているミニトマトの下の葉に茶色い斑点が出て、だんだん黄色くなってきました。病気ですか？"),
            A("下葉から茶色い輪紋状の斑点が広がるなら、葉かび病か輪紋病の可能性が高いです。湿気がこもると"
              "広がりやすいので、症状のある葉は取り除いて、株元の風通しを良くしてください。"),
            U("水やりは毎日夕方に上からかけています"),
            A("夕方の水やりは夜まで葉が濡れたままになるので、病気が広がる原因になります。朝、株元の土に直接"
              "あげるようにしてください。雨の日はベランダの奥に移すのも効果的です。"),
            U("朝の水やりに変えて二週間、新しい葉はきれいです"),
        ],
        {"prefix": "ミニトマ", "words": "輪紋 斑点", "vague": "水やり 葉 病気",
         "spread": "黄色 風通し 二週間"},
    ),
    # ----------------------------------------------------------------------- Korean
    needle(
        "b-ko-crashloop", "ko", "cli", 10, "결제 서비스 파드 재시작 반복",
        [
            U("payment-api 파드가 배포 후에 계속 CrashLoopBackOff 상태예요. 로그에는 아무것도 안 남아요."),
            T("terminal", {"command": "kubectl describe pod payment-api-7d9f8b6c5-x2k4p -n prod"},
              "Last State:     Terminated\n  Reason:       Error\n  Exit Code:    143\n"
              "Liveness:       http-get http://:8080/actuator/health delay=30s\n"
              "Events:\n  Warning  Unhealthy  Liveness probe failed: connection refused",
              say="파드 상태를 확인해 볼게요."),
            A("종료 코드 143은 SIGTERM이에요. 라이브니스 프로브가 30초 뒤부터 검사하는데, 이번 배포부터 "
              "애플리케이션 기동이 그보다 오래 걸려서 쿠버네티스가 계속 재시작하는 것 같아요."),
            U("맞아요, 스프링 부트 기동이 90초 정도 걸려요. 어떻게 고치죠?"),
            A("startupProbe 를 추가해서 기동이 끝날 때까지 라이브니스 검사를 미루세요. 예를 들어 "
              "failureThreshold 30, periodSeconds 5 로 하면 최대 150초까지 기다립니다."),
            U("startupProbe 넣고 재배포했더니 정상으로 올라왔어요"),
        ],
        {"prefix": "라이브니", "words": "스프링 기동 90초", "vague": "배포 계속 상태",
         "spread": "payment 재시작 재배포"},
    ),
    needle(
        "b-ko-license", "ko", "telegram", 150, "운전면허 적성검사 갱신",
        [
            U("운전면허 적성검사 기간이 다음 달에 끝난대요. 회사 때문에 평일에 시간이 없는데 어떻게 해야 하나요?"),
            A("온라인으로 신청할 수 있어요. 도로교통공단 안전운전 통합민원 사이트에서 건강검진 결과를 연동하면 "
              "방문 없이 갱신 신청이 되고, 새 면허증은 가까운 경찰서에서 받거나 등기로 받을 수 있어요."),
            U("건강검진은 작년에 회사에서 받았어요"),
            A("최근 2년 이내 국가건강검진 결과면 시력 기록이 연동돼서 그대로 쓸 수 있어요. 사진은 6개월 이내에 "
              "찍은 여권용 규격이어야 해요."),
            U("온라인으로 신청했고 면허증은 등기로 오기로 했어요"),
        ],
        {"prefix": "적성검", "words": "건강검진 시력 연동", "vague": "평일 시간",
         "spread": "면허 여권용 등기"},
    ),
    needle(
        "b-ko-laptop", "ko", "discord", 310, "개발용 노트북 구매 고민",
        [
            U("개발용 노트북을 새로 사려고 하는데 맥북 에어 M3랑 씽크패드 T14 중에 고민이에요. 주로 도커랑 "
              "안드로이드 스튜디오를 써요."),
            A("안드로이드 에뮬레이터와 도커를 같이 돌리면 메모리가 제일 중요해요. 어느 쪽이든 최소 24GB 이상을 "
              "권해요. 맥북 에어는 팬이 없어서 오래 빌드하면 성능이 떨어지는 점도 고려하세요."),
            U("예산은 200만 원 정도예요"),
            A("그 예산이면 에어 24GB 모델이 딱 맞고, 씽크패드는 32GB에 리눅스를 깔아 쓰는 방법도 있어요."),
            U("리눅스에서 안드로이드 스튜디오 잘 돌아가나요?"),
            A("네, 잘 돌아가요. KVM 가속이 되면 에뮬레이터는 오히려 빠른 편이에요. 다만 iOS 개발은 못 하니 "
              "그게 필요하면 맥북이 답이에요."),
            U("iOS는 안 하니까 씽크패드 32GB로 주문했어요"),
        ],
        {"prefix": "씽크패", "words": "에뮬레이터 메모리 빌드", "vague": "노트북 고민",
         "spread": "예산 kvm 주문"},
        split_turn=4,
    ),
]

NEEDLES_B: list[Needle] = EN_B + CJK_B
#: The set is smaller than the first (the model's full check wants 40); its spread of ages,
#: languages and shapes is checked by tests/bench/test_relevance_needles_b.py.
validate(NEEDLES_B, min_needles=24, min_cjk=8)
