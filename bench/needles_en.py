"""English needles of the relevance bench: hand-written dev, ops and personal-assistant chats
(see :mod:`bench.needle_model`). Written for this bench; any likeness to the generated corpus
is only in the common words a person would use anyway."""

from __future__ import annotations

from .needle_model import A, T, U, needle

EN = [
    needle(
        "caddy-udp", "en", "cli", 1, "Caddy in front of the Valheim server",
        [
            U("I run a Valheim server on the NUC and want Caddy in front of it so friends can use "
              "a hostname instead of my IP. Can Caddy even do that?"),
            A("Caddy's core only proxies HTTP. For a game server you need the layer4 app, which "
              "means a custom build with the caddy-l4 plugin. Valheim talks over UDP on ports "
              "2456-2458, so plain reverse_proxy won't see that traffic at all."),
            T("terminal", {"command": "xcaddy build --with github.com/mholt/caddy-l4"},
              "2026/01/02 19:11:04 [INFO] Build environment ready\n2026/01/02 19:12:37 [INFO] Build complete: ./caddy",
              say="Building Caddy with the layer4 plugin."),
            U("built it. what do I put in the config for the udp rule?"),
            A("Add a layer4 server that listens on udp/:2456 and proxies to the NUC, one route per "
              "port. Put it in the JSON config, the Caddyfile adapter doesn't know layer4 yet. Then "
              "open 2456-2458/udp on the router and reload."),
            U("Works! friends are connected. thanks"),
        ],
        {"prefix": "cadd", "words": "layer4 config udp", "vague": "server proxy port",
         "spread": "caddy friends connected"},
    ),
    needle(
        "pgbouncer-pool", "en", "cli", 2, "pgbouncer pool exhaustion on billing-api",
        [
            U("billing-api keeps throwing 'sorry, too many clients already' at 9am every day. "
              "postgres max_connections is 200."),
            T("terminal", {"command": "psql -c 'select count(*), state from pg_stat_activity group by state'"},
              " count | state\n-------+--------\n   183 | idle\n    14 | active\n     3 | idle in transaction"),
            A("183 idle connections: every gunicorn worker keeps its own SQLAlchemy pool of 10. "
              "With 20 workers that's the whole postgres server. Put pgbouncer in transaction pooling mode "
              "between the app and postgres and shrink the app pool."),
            U("does transaction pooling break anything?"),
            A("Session state does not survive between transactions: prepared statements, SET "
              "commands, advisory locks. With psycopg 3 turn off automatic prepared statements "
              "(prepare_threshold=None) and you should be fine."),
            U("deployed pgbouncer with default_pool_size 40, the morning spike is gone"),
        ],
        {"prefix": "pgboun", "words": "pgbouncer transaction pooling", "vague": "postgres worker server",
         "spread": "gunicorn prepared spike"},
    ),
    needle(
        "wireguard-mtu", "en", "telegram", 4, "WireGuard drops big packets from the office",
        [
            U("ssh over the wireguard tunnel works but git clone hangs forever. any idea?"),
            A("Small packets pass and large ones stall: that smells like an MTU problem. "
              "WireGuard adds 80 bytes of overhead, and if the office network uses PPPoE the path "
              "MTU is 1492, not 1500."),
            U("how do I check"),
            A("Ping with the don't-fragment bit and shrink the size until it passes: "
              "ping -M do -s 1400 10.8.0.1. Then set MTU = that + 28 - 80 in the [Interface] "
              "section of wg0.conf."),
            U("1392 was the biggest that went through. set MTU = 1340 and git clone is instant now"),
            A("Good. Write it down somewhere, a new laptop will hit the same thing."),
        ],
        {"prefix": "wiregu", "words": "wireguard tunnel hangs", "vague": "large packets network",
         "spread": "wireguard 1340 clone"},
    ),
    needle(
        "sourdough-starter", "en", "whatsapp", 6, "Reviving the sourdough starter",
        [
            U("my sourdough starter has a grey liquid on top and smells like nail polish. is it dead or can I fix it?"),
            A("Almost certainly not. The liquid is hooch: alcohol the yeast makes when it's hungry. "
              "The acetone smell means the same thing. Pour it off, discard all but a spoonful, and "
              "feed it equal weights of flour and water twice a day."),
            U("should I use the rye flour or the normal one"),
            A("Rye for the first few feedings: it has more wild yeast and enzymes, so the starter "
              "wakes up faster. Switch back to bread flour once it doubles within 6 hours."),
            U("it doubled this morning! baking a loaf on saturday"),
            A("Then feed it Friday night so it peaks when you mix the dough. Enjoy the bake."),
        ],
        {"prefix": "sourdo", "words": "hooch yeast hungry", "vague": "smells dead fix",
         "spread": "sourdough doubled saturday"},
    ),
    needle(
        "terraform-state-lock", "en", "cli", 9, "Stuck terraform state lock in the infra repo",
        [
            U("terraform apply says 'Error acquiring the state lock' and the lock is from a CI job "
              "that died yesterday"),
            T("terminal", {"command": "terraform force-unlock -force 9f1c2a44-7f3e-4d1b-b1aa-0c2e5e8f3d21"},
              "Terraform state has been successfully unlocked!"),
            A("Unlocked. The lock lived in the DynamoDB table the S3 backend uses; a killed runner "
              "never released it. Run plan before apply to be sure no half-written state is left."),
            U("plan shows 3 changes to the route53 records, that's expected"),
            A("Then apply. To stop this happening again, give the CI job a timeout shorter than the "
              "runner's, so terraform itself gets the signal and releases the lock."),
        ],
        {"prefix": "dynamod", "words": "terraform state lock", "vague": "lock table plan",
         "spread": "dynamodb route53 timeout"},
    ),
    needle(
        "bike-chain", "en", "signal", 13, "Bike chain skipping on the commute",
        [
            U("the chain on my commuter bike skips when I pedal hard in the small cog. new chain "
              "last month"),
            A("A new chain on a worn cassette does exactly that: the old cogs are shaped to the "
              "old stretched chain. Check the cassette teeth, if they look like shark fins the "
              "cassette needs replacing too."),
            U("teeth look fine honestly. it's only the 11t"),
            A("Then try the derailleur first: a quarter turn of the barrel adjuster anticlockwise "
              "while turning the cranks, until the chain sits quietly on the smallest cog. Also "
              "check the hanger isn't bent."),
            U("barrel adjuster fixed it, half a turn. riding fine now"),
        ],
        {"prefix": "derail", "words": "cassette teeth shark", "vague": "bike chain small",
         "spread": "commuter barrel riding"},
    ),
    needle(
        "nginx-websocket", "en", "slack", 17, "Websocket disconnects behind nginx",
        [
            U("our dashboard websockets disconnect exactly every 60 seconds in prod but not locally"),
            A("60 seconds is nginx's default proxy_read_timeout. A websocket with no traffic for a "
              "minute gets closed by the proxy. Either raise the timeout for that location or send "
              "pings from the server every 30 seconds."),
            U("we already have the Upgrade headers. I'll add proxy_read_timeout 3600"),
            T("terminal", {"command": "sudo nginx -t && sudo systemctl reload nginx"},
              "nginx: the configuration file /etc/nginx/nginx.conf syntax is ok\n"
              "nginx: configuration file /etc/nginx/nginx.conf test is successful"),
            A("Reloaded. I'd still add application-level heartbeats: load balancers in front of "
              "nginx have their own idle timeouts."),
            U("confirmed, the dashboard has been connected for 20 minutes"),
        ],
        {"prefix": "websock", "words": "websocket timeout minute", "vague": "dashboard seconds prod",
         "spread": "dashboard heartbeats 3600"},
    ),
    needle(
        "tax-receipts", "en", "telegram", 22, "Collecting receipts for the tax return",
        [
            U("remind me which receipts I need for the home office deduction"),
            A("For the home office you need: the rent or mortgage interest statement, utility bills "
              "for the year, the internet bill, and a floor plan showing the office's square metres. "
              "Keep receipts for the desk and chair too, they depreciate separately."),
            U("the accountant wants everything by march 15"),
            A("I'll remind you on March 1st to collect the utility bills and on March 10th to send "
              "the folder. Should I make a checklist in your notes?"),
            U("yes please, call it taxes 2025"),
            T("memory", {"action": "add", "content": "taxes 2025 checklist: mortgage statement, utilities, internet, floor plan, desk receipts; due to accountant March 15"},
              "Saved."),
            A("Done, the checklist is saved as 'taxes 2025'."),
        ],
        {"prefix": "deducti", "words": "receipts home office", "vague": "home office plan",
         "spread": "accountant checklist depreciate"},
    ),
    needle(
        "flaky-pytest-xdist", "en", "cli", 27, "Flaky test under pytest-xdist",
        [
            U("test_invoice_rounding passes alone but fails one run in five with pytest -n 4"),
            T("terminal", {"command": "pytest -n 4 -p no:randomly tests/test_invoices.py --count 20"},
              "FAILED tests/test_invoices.py::test_invoice_rounding - AssertionError: Decimal('10.01') != Decimal('10.00')\n"
              "4 failed, 76 passed in 12.31s"),
            A("It fails only in parallel, so something is shared between workers. The test reads "
              "the currency table that test_currency_seed rewrites; under xdist both run at the same "
              "time against the same sqlite file."),
            U("ugh. both tests use the fixture db at /tmp/billing.db"),
            A("Give each worker its own file: build the path from the worker_id fixture "
              "(/tmp/billing-gw0.db, gw1…). Then no test sees another's seed."),
            U("per-worker databases fixed it, 200 runs green"),
        ],
        {"prefix": "xdis", "words": "worker fixture path", "vague": "test invoice fails",
         "spread": "rounding gw0 green"},
    ),
    needle(
        "visa-appointment", "en", "email", 35, "Visa appointment for the Tokyo conference",
        [
            U("I need a visa for the conference in Tokyo in April. what's the process from Lagos?"),
            A("Nigerian passport holders need a short-term business visa. You apply at the Embassy "
              "of Japan in Abuja (Lagos applications go through the consulate's agent): invitation "
              "letter from the conference, guarantee letter, flight reservation, bank statements for "
              "3 months, one photo 45x35 mm."),
            U("how long does it take"),
            A("Usually 5 working days after submission, but book the appointment early: slots in "
              "March fill up weeks ahead."),
            U("ok book me the earliest appointment slot in February and add it to my calendar"),
            A("The earliest slot is February 11 at 10:30. I've added it to your calendar with the "
              "document list in the notes."),
        ],
        {"prefix": "embass", "words": "visa tokyo april", "vague": "flight letter bank",
         "spread": "nigerian slot calendar"},
    ),
    needle(
        "grafana-loki-retention", "en", "cli", 42, "Loki eats the disk on the monitoring box",
        [
            U("the monitoring VM is at 97% disk again. it's loki's chunks directory"),
            T("terminal", {"command": "du -sh /var/lib/loki/* | sort -h | tail -3"},
              "1.2G\t/var/lib/loki/wal\n4.8G\t/var/lib/loki/index\n71G\t/var/lib/loki/chunks"),
            A("71G of chunks: retention isn't on. In Loki it's off by default; the compactor deletes "
              "old chunks only with retention_enabled: true and a limits_config retention_period."),
            U("set it to 30 days?"),
            A("30 days is reasonable for app logs. Set retention_period: 720h, enable the compactor's "
              "retention, restart, and the disk frees up within a couple of compaction cycles."),
            U("down to 22G after an hour. grafana dashboards still fine"),
        ],
        {"prefix": "compact", "words": "loki chunks directory", "vague": "disk again directory",
         "spread": "monitoring 720h grafana"},
    ),
    needle(
        "dentist-reschedule", "en", "whatsapp", 50, "Moving the dentist appointment",
        [
            U("can you move my dentist appointment on thursday? I have a client call at 3"),
            A("Dr. Okafor's office has Friday at 9:15 or next Tuesday at 16:00 free. Which one?"),
            U("friday morning"),
            A("Moved to Friday 9:15. They asked you to bring the x-rays from the previous clinic "
              "for the crown check."),
            U("where are those x-rays even"),
            A("You scanned them in August: 'xray-molars-2025.pdf' in your Documents/health folder. "
              "I'll attach it to the appointment reminder."),
        ],
        {"prefix": "okafo", "words": "dentist appointment thursday", "vague": "move client call",
         "spread": "crown molars friday"},
    ),
    needle(
        "redis-eviction", "en", "cli", 58, "Sessions vanishing from redis",
        [
            U("users get logged out randomly. sessions are in redis with a 7 day TTL"),
            T("terminal", {"command": "redis-cli info stats | grep evicted_keys"},
              "evicted_keys:184223"),
            A("184k evicted keys: redis is full and throws keys away. Its maxmemory-policy is "
              "allkeys-lru, so sessions go along with cache entries."),
            U("the rate limiter and the page cache share that instance"),
            A("Split them: sessions on their own instance with noeviction (a write fails loudly "
              "instead of a user silently losing their login), cache keeps allkeys-lru."),
            U("moved sessions to a separate redis, no more random logouts"),
        ],
        {"prefix": "evicte", "words": "redis full keys", "vague": "logged out user",
         "spread": "limiter noeviction logouts"},
    ),
    needle(
        "piano-lessons", "en", "telegram", 66, "Piano lessons for Mia",
        [
            U("looking for a piano teacher for Mia, she's 8. ideally someone who comes to the house"),
            A("Three teachers nearby do home visits: Ana Ribeiro (classical, ABRSM exams), Tom "
              "Lindqvist (pop and improvisation) and the Suzuki studio on Elm street, which does not "
              "travel. For an 8 year old a trial lesson with two of them is a good idea."),
            U("book trial lessons with ana and tom"),
            A("Ana: Wednesday 17:00. Tom: Saturday 11:00. Both 30 minutes, both at home."),
            U("Mia liked Tom much more, he let her play the Mario theme"),
            A("Then I'll tell Ana thanks but no, and set up weekly Saturday lessons with Tom."),
        ],
        {"prefix": "lindqv", "words": "piano teacher house", "vague": "trial lesson year old",
         "spread": "mia abrsm mario"},
    ),
    needle(
        "k8s-oomkilled", "en", "slack", 75, "Search service OOMKilled after the upgrade",
        [
            U("after the JVM upgrade the search pods get OOMKilled every few hours"),
            T("terminal", {"command": "kubectl describe pod search-7d9c5b-xk2lp | grep -A3 'Last State'"},
              "    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137"),
            A("The new JVM sizes its heap from the container's memory limit: MaxRAMPercentage "
              "defaults to 25%, but you also set -Xmx to the full limit in JAVA_OPTS, so heap plus "
              "metaspace plus direct buffers exceed the limit."),
            U("so drop Xmx?"),
            A("Drop -Xmx and set -XX:MaxRAMPercentage=70. The remaining 30% covers metaspace, "
              "threads and Lucene's off-heap buffers."),
            U("no restarts for two days now"),
        ],
        {"prefix": "oomkil", "words": "jvm heap limit", "vague": "search pods upgrade",
         "spread": "lucene restarts upgrade"},
    ),
    needle(
        "gift-anniversary", "en", "signal", 84, "Anniversary gift ideas",
        [
            U("our 10th anniversary is in three weeks. ideas? she likes ceramics and hiking"),
            A("Tenth anniversaries are traditionally tin or aluminium. Some ideas: a weekend "
              "ceramics workshop for two, a hand-stamped tin trail map of the hike you did on your "
              "first trip, or a kiln-fired mug set from a local potter."),
            U("the tin trail map is a great idea. it was the Ridgeback loop in 2016"),
            A("Etsy sellers make engraved aluminium maps from a GPX file. I found two who ship "
              "within 2 weeks; the one from Porto has the better reviews."),
            U("order the porto one"),
            A("Ordered, delivery estimate in 11 days, well before the date."),
        ],
        {"prefix": "ceram", "words": "anniversary three weeks", "vague": "ideas likes hiking",
         "spread": "ridgeback porto engraved"},
    ),
    needle(
        "git-lfs-migrate", "en", "cli", 97, "Moving the design assets to git lfs",
        [
            U("the mobile-app repo is 4GB because of psd files. clone takes forever"),
            T("terminal", {"command": "git lfs migrate info --everything --top=5"},
              "*.psd\t3.1 GB\t412/412 files(s)\t100%\n*.png\t402 MB\t1880/1904 files(s)\t 99%"),
            A("3.1GB is psd files in history. git lfs migrate import --everything --include='*.psd' "
              "rewrites history so they become pointers; everyone must re-clone afterwards."),
            U("we have 3 open PRs"),
            A("Merge or rebase them first: rewritten history gives every commit a new hash, so open "
              "branches would carry the old blobs back. Announce a freeze, migrate, force-push."),
            U("migration done, fresh clone is 180MB"),
        ],
        {"prefix": "migrat", "words": "psd files history", "vague": "repo files clone",
         "spread": "freeze 180mb psd"},
    ),
    needle(
        "vacation-itinerary", "en", "telegram", 110, "Lisbon and Sintra itinerary",
        [
            U("plan a 4 day trip to Lisbon for us in May. one day should be Sintra"),
            A("Day 1 Alfama and the castle, tram 28 early before the queues. Day 2 Belém: the "
              "monastery, the tower, pastéis at the original bakery. Day 3 Sintra: Pena palace "
              "first thing, then Quinta da Regaleira. Day 4 LX Factory and a sunset at Miradouro "
              "da Senhora do Monte."),
            U("is the Sintra train easy"),
            A("Yes, 40 minutes from Rossio station, every 20 minutes. Buy Pena tickets online with "
              "a timed entry, the walk up is steep so take the 434 bus."),
            U("book the Pena tickets for the 14th at 9:30"),
            A("Booked, two adults, 14 May 09:30. The tickets are in your email."),
        ],
        {"prefix": "regalei", "words": "sintra train easy", "vague": "plan trip may",
         "spread": "lisbon 434 tickets"},
        split_turn=2,
    ),
    needle(
        "s3-presigned", "en", "cli", 125, "Presigned upload URLs expiring too soon",
        [
            U("presigned S3 upload URLs for the bucket die after about an hour even though I set ExpiresIn to 7 days"),
            A("A presigned URL can't outlive the credentials that signed it. If the API server signs "
              "with the instance role's temporary credentials, the URL expires when that STS session "
              "does, about an hour later."),
            U("yes it's an ECS task role"),
            A("Then either sign with a dedicated IAM user's long-lived keys (kept in Secrets "
              "Manager), or keep uploads short and mint a new URL when the client needs one. The "
              "second is safer."),
            T("write_file", {"path": "api/uploads.py", "content": "def upload_url(key):\n    return s3.generate_presigned_url('put_object', Params={'Bucket': BUCKET, 'Key': key}, ExpiresIn=900)\n"},
              "Wrote api/uploads.py"),
            A("Changed it to 15 minute URLs minted on demand by the client."),
        ],
        {"prefix": "presig", "words": "credentials sts session", "vague": "upload bucket hour",
         "spread": "ecs safer minute"},
    ),
    needle(
        "home-assistant-zigbee", "en", "discord", 138, "Zigbee sensors dropping off Home Assistant",
        [
            U("my zigbee door sensors keep going unavailable in home assistant, the ones in the garage"),
            A("Battery sensors need a router (a mains-powered zigbee device) within range; they "
              "don't repeat. The garage is probably too far from the coordinator. Also check the "
              "channel: zigbee channel 11 overlaps wifi channel 1."),
            U("coordinator is a sonoff dongle on channel 11, wifi is on channel 1"),
            A("Move zigbee to channel 25 (outside wifi's range) and put a smart plug in the hallway "
              "as a repeater. Changing the channel means re-pairing every device, unfortunately."),
            U("re-paired everything on 25 with a plug in the hallway. garage sensors stable for a week"),
        ],
        {"prefix": "coordina", "words": "zigbee sensors unavailable", "vague": "door garage keep going",
         "spread": "sonoff hallway stable"},
    ),
    needle(
        "cert-renewal-cron", "en", "cli", 152, "Let's Encrypt renewal silently failing",
        [
            U("got an email that the certificate for status.example.org expires in 9 days. certbot should "
              "have renewed it"),
            T("terminal", {"command": "sudo certbot renew --dry-run"},
              "Failed to renew certificate status.example.org with error: Some challenges have failed.\n"
              "Detail: 203.0.113.7: Invalid response from http://status.example.org/.well-known/acme-challenge/: 404"),
            A("The HTTP-01 challenge gets a 404: the site moved behind the new Go status page which "
              "doesn't serve /.well-known. Add a location for acme-challenge pointing at certbot's "
              "webroot."),
            U("added it. dry run passes"),
            A("Also the systemd timer was fine, it's the failure that was silent: add "
              "--deploy-hook to reload and a mail on failure so you hear about it before the 9 day "
              "warning."),
        ],
        {"prefix": "certbo", "words": "challenge 404 webroot", "vague": "email certificate expires",
         "spread": "acme silent timer"},
        split_turn=3,
    ),
    needle(
        "apartment-lease", "en", "email", 166, "Lease renewal and the rent increase",
        [
            U("the landlord wants 18% more rent from June. is that even allowed?"),
            A("Under your city's rent stabilisation rules an increase on renewal is capped at the "
              "inflation index plus 2%, currently 5.6%. 18% is above the cap unless the unit was "
              "substantially renovated."),
            U("nothing was renovated. the boiler still breaks every winter"),
            A("Then reply in writing citing the cap and ask for the calculation. I drafted a "
              "polite letter mentioning the boiler repairs you reported in January and November."),
            U("send it"),
            A("Sent. The landlord replied this afternoon: they'll renew at 5.6%."),
        ],
        {"prefix": "stabilis", "words": "landlord rent june", "vague": "wants more allowed",
         "spread": "boiler renovated renew"},
    ),
    needle(
        "ci-cache-poetry", "en", "cli", 179, "CI spends 9 minutes installing dependencies",
        [
            U("github actions takes 9 minutes on poetry install every run. the cache step says "
              "cache hit"),
            A("The cache restores ~/.cache/pypoetry but poetry still creates a fresh virtualenv in "
              "the runner's temp dir and installs into it. Cache the .venv instead: set "
              "virtualenvs.in-project true and cache .venv keyed on poetry.lock."),
            T("patch", {"path": ".github/workflows/ci.yml", "old_string": "path: ~/.cache/pypoetry", "new_string": "path: .venv"},
              "Patched .github/workflows/ci.yml"),
            U("first run after that was 9 minutes, second one 48 seconds"),
            A("As expected: the first run fills the cache. Include the python version in the key "
              "or a runner image update will restore an incompatible venv."),
        ],
        {"prefix": "virtuale", "words": "poetry install minutes", "vague": "cache every run",
         "spread": "actions seconds lock"},
    ),
    needle(
        "wedding-speech", "en", "whatsapp", 195, "Best man speech for Daniel",
        [
            U("I'm best man at Daniel's wedding and I have to give a speech. help me not embarrass "
              "myself"),
            A("Keep it to 4-5 minutes. A shape that works: who you are, one story that shows who "
              "Daniel is, how he changed when he met Priya, a toast. One story told well beats five "
              "inside jokes."),
            U("the canoe story. we capsized on the Wye and he saved the sandwiches instead of the paddles"),
            A("Perfect: it's funny and it says he has priorities. End it with 'and that's why I know "
              "he'll always look after what matters', then turn to Priya."),
            U("draft the whole thing with that"),
            A("Here's a 4 minute draft. Read it aloud twice with a timer and cut anything you stumble on."),
        ],
        {"prefix": "capsiz", "words": "best man speech", "vague": "story told well",
         "spread": "priya sandwiches toast"},
        split_turn=4,
    ),
    needle(
        "sqlite-busy", "en", "cli", 215, "database is locked in the worker",
        [
            U("our queue worker logs 'database is locked' under load. sqlite, WAL mode already on"),
            A("WAL lets readers and one writer work together, but two writers still queue, and "
              "without a busy timeout the second one fails at once. Set PRAGMA busy_timeout=5000 on "
              "every connection."),
            U("we do set timeout=30 in sqlite3.connect"),
            A("Then look for a transaction that upgrades: a read inside BEGIN that later writes "
              "can't wait for the lock, sqlite returns SQLITE_BUSY immediately to avoid a deadlock. "
              "Start write transactions with BEGIN IMMEDIATE."),
            T("search_files", {"pattern": "BEGIN", "path": "worker"},
              "worker/jobs.py:88:    conn.execute('BEGIN')\nworker/jobs.py:141:    conn.execute('BEGIN')"),
            A("Both transactions in worker/jobs.py read first and write later. Changing them to "
              "BEGIN IMMEDIATE."),
            U("no more locked errors in 3 days of load tests"),
        ],
        {"prefix": "immedia", "words": "pragma busy connection", "vague": "queue worker database",
         "spread": "queue deadlock jobs"},
    ),
    needle(
        "marathon-training", "en", "telegram", 240, "Marathon training plan for Berlin",
        [
            U("I signed up for the Berlin marathon in September. I run 25 km a week now. plan?"),
            A("16 weeks from June: build to a 32 km long run, peak weeks around 60 km, one tempo "
              "session and one interval session a week, the rest easy. Taper the last 3 weeks."),
            U("my calf always tightens after 20 km"),
            A("Common with a sudden jump in long runs. Add 10% a week at most, do eccentric calf "
              "raises 3x15 after easy runs, and check your shoes' mileage: over 700 km the foam is dead."),
            U("shoes have 900 km on them lol. buying new ones"),
            A("Break them in on easy runs for two weeks before using them for long runs."),
        ],
        {"prefix": "eccentr", "words": "marathon september plan", "vague": "build long run",
         "spread": "berlin calf shoes"},
        split_turn=2,
    ),
    needle(
        "mqtt-mosquitto-auth", "en", "cli", 268, "Mosquitto refusing the garden sensors",
        [
            U("upgraded mosquitto to 2.0 and now the garden esp32 sensors can't connect"),
            T("terminal", {"command": "journalctl -u mosquitto -n 5"},
              "mosquitto[812]: Starting in local only mode. Connections will only be possible from clients running on this machine.\n"
              "mosquitto[812]: Opening ipv4 listen socket on port 1883."),
            A("Mosquitto 2.0 listens only on localhost unless a listener is configured, and "
              "refuses anonymous clients by default. Add 'listener 1883' and either a password file "
              "or 'allow_anonymous true' for the LAN."),
            U("password file please, the sensors support it"),
            A("mosquitto_passwd -c /etc/mosquitto/passwd garden, then password_file in the config "
              "and the same user/password in the ESPHome mqtt block."),
            U("soil moisture readings are coming in again"),
        ],
        {"prefix": "mosquit", "words": "listener anonymous clients", "vague": "garden sensors connect",
         "spread": "esp32 soil passwd"},
    ),
    needle(
        "car-insurance-claim", "en", "email", 296, "Insurance claim for the parking lot dent",
        [
            U("someone dented my car in the supermarket parking lot and drove off. do I claim?"),
            A("With a hit-and-run and no third party identified, it goes on your own comprehensive "
              "policy: excess 300, and it may cost your no-claims discount. Ask the supermarket for "
              "the CCTV footage first; if they find the plate, their insurer pays."),
            U("the supermarket says they keep footage 14 days"),
            A("Then request it in writing today with the date, time and bay number. I've drafted "
              "the email to their customer service with your photos of the dent attached."),
            U("they found the plate!"),
            A("Great: send the plate and the footage reference to your insurer and ask them to claim "
              "from the other driver's insurer. Your no-claims stays untouched."),
        ],
        {"prefix": "footag", "words": "hit run comprehensive", "vague": "own policy discount",
         "spread": "parking footage bay"},
    ),
    needle(
        "rust-borrow-async", "en", "cli", 330, "Borrowed value in tokio spawn",
        [
            U("rust says `config` does not live long enough when I pass &config into tokio::spawn"),
            A("tokio::spawn needs a 'static future: the task may outlive the function, so it can't "
              "borrow a local. Wrap the config in an Arc, clone the Arc for each task and move the "
              "clone into the async block."),
            U("it's read only, do I need Arc or can I leak it"),
            A("Box::leak works for config that lives for the whole program and is simpler, but Arc "
              "is the usual answer and costs one atomic increment per spawn."),
            T("patch", {"path": "src/main.rs", "old_string": "let config = load()?;", "new_string": "let config = Arc::new(load()?);"},
              "Patched src/main.rs"),
            U("compiles. went with Arc"),
        ],
        {"prefix": "toki", "words": "static future borrow", "vague": "config live long",
         "spread": "leak compiles spawn"},
    ),
    needle(
        "old-laptop-backup", "en", "cli", 358, "Restic backups of the old ThinkPad",
        [
            U("before I wipe the old thinkpad I want a proper backup of home to the NAS"),
            A("restic is a good fit: deduplicated, encrypted, and it can mount a snapshot to browse "
              "it later. Initialise a repository on the NAS over sftp and back up /home with the "
              "cache and Downloads excluded."),
            T("terminal", {"command": "restic -r sftp:nas:/backups/thinkpad backup /home --exclude-caches --exclude /home/joe/Downloads"},
              "Files:       182734 new,     0 changed,     0 unmodified\nAdded to the repository: 61.402 GiB\nsnapshot 4f8a1c2e saved"),
            U("how do I know it actually works"),
            A("restic check --read-data-subset=5% verifies a sample of the packs; and restore one "
              "folder to /tmp and diff it against the original."),
            U("check passed and the restored photos folder matches. wiping it tomorrow"),
        ],
        {"prefix": "resti", "words": "thinkpad backup nas", "vague": "old backup home",
         "spread": "sftp photos wiping"},
    ),
]
