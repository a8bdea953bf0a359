"""A fourth held-out needle set, half in the corpus's words and half in a person's: :data:`NEEDLES_D`.

Why a fourth set: set b (:mod:`bench.needles_b`) was written in a person's everyday words, so
most of its queries matched nothing but the needle in the generated corpus; set c
(:mod:`bench.needles_c`) was written in the corpus's own vocabulary, so its common words
compete with thousands of generated messages. Both were smaller than the model's full check
(24 conversations). Set d is the full size, 40 conversations (26 English, 6 Chinese,
4 Japanese, 4 Korean), eight in each age bucket, and mixes the two on purpose:

* :data:`CORPUS_TOPICS` -- twenty conversations about what the generator also talks about
  (workers and queues, caches, certificates, config, logs, databases, deploys, 部署, ディスク,
  데이터베이스); the English ones' vague queries are words the generator writes;
* the other twenty are what a person also asks an agent: a trip, a recipe, a tax form, a
  birthday, a car repair, a language, a lease, a passport.

Sources vary (cli, tui, telegram, discord, slack, whatsapp, signal, matrix, email); eight are
compression chains (in cli and in gateway chats, in English and CJK); four were never titled,
as many a real conversation is not (a sourdough starter, a dog's itching, a logging bill, a
Korean stew).

Written like sets b and c: by someone who read neither the ranking code (``hermes_state/search``,
``hermes_state/retrieval.py``) nor the bench README's notes on why queries were missed, nor the
first set's queries. The corpus generator's vocabulary was read, the ranking was not. Each
conversation and its four queries were written together, as a person would type them, before
the bench ran; the set was measured once (``python -m bench.relevance --needles d``) and
nothing was changed after.
"""

from __future__ import annotations

from .needle_model import A, T, U, Needle, needle, validate

EN_D = [
    # ----------------------------------------------------------------------- 1-7 days
    needle(
        "d-celery-visibility", "en", "cli", 1, "Celery tasks run twice after moving the broker to Redis",
        [
            U("since we moved the celery broker from rabbitmq to redis last week, some long tasks run "
              "twice. the invoice export task sent two emails to a customer this morning"),
            T("read_file", {"path": "config/celery.py"},
              "broker_url = os.environ['REDIS_URL']\ntask_acks_late = True\nworker_prefetch_multiplier = 4",
              say="Looking at the worker settings."),
            A("With the Redis broker, a task that isn't acknowledged within the visibility timeout (one "
              "hour by default) is handed to another worker. You have acks_late on, so a task is only "
              "acknowledged when it finishes, and the export takes longer than an hour for big "
              "customers, so Redis delivers it again while the first worker is still running it."),
            U("the export can take up to 3 hours for the largest accounts"),
            A("Set broker_transport_options = {'visibility_timeout': 4 * 3600} so it is longer than your "
              "slowest task, and make the email step idempotent: record that the invoice export was "
              "sent before sending. A prefetch multiplier of 1 also keeps long tasks from sitting "
              "reserved on a busy worker."),
            U("raised the visibility timeout to 4 hours and set prefetch to 1, no duplicates in today's run"),
        ],
        {"prefix": "visib", "words": "long tasks twice", "vague": "redis worker timeout",
         "spread": "celery rabbitmq prefetch"},
    ),
    needle(
        "d-lisbon-trip", "en", "telegram", 2, "Four days in Lisbon in May",
        [
            U("planning a trip to lisbon with my wife, four days in may, first time for both of us. what "
              "should we not miss, and is sintra worth a day?"),
            A("Sintra is worth a full day: take the train from Rossio (40 minutes), go early, and book "
              "Pena Palace tickets online with a time slot. In Lisbon: Alfama on foot, the view from "
              "Miradouro da Senhora do Monte at sunset, Belém for the tower and the custard tarts, and "
              "LX Factory on a Sunday."),
            U("is tram 28 a good idea or a tourist trap?"),
            A("The route is lovely but the tram is packed from 10 am on. Ride it from Martim Moniz "
              "before 9, or walk the same streets in Alfama. Buy a Viva Viagem card for trams and the "
              "metro rather than paying on board."),
            U("booked pena for tuesday 9:30 and we'll do the tram early on monday"),
        ],
        {"prefix": "sintr", "words": "tram tourist trap", "vague": "trip four days",
         "spread": "alfama viva tuesday"},
    ),
    needle(
        "d-sourdough", "en", "whatsapp", 4, "",
        [
            U("my sourdough starter is 10 days old and barely rises. bubbles on top but it never "
              "doubles. the kitchen is pretty cold"),
            A("Cold is likely the whole story: below about 20°C a young starter is sluggish. Keep it "
              "somewhere warmer, like the oven with only the light on, or on top of the fridge. Which "
              "flour are you feeding it?"),
            U("all purpose white flour, 1:1:1 once a day"),
            A("Mix in 20-30% whole wheat or rye: more wild yeast and more food for it. Feed it twice a "
              "day while it's warm, and put a rubber band on the jar at the level after feeding so you "
              "can see when it doubles."),
            U("rye plus the oven light, it doubled in 6 hours today"),
        ],
        {"prefix": "sourd", "words": "starter barely rises", "vague": "oven light warm",
         "spread": "kitchen rye doubled"},
    ),
    needle(
        "d-nginx-413", "en", "telegram", 5, "Large photo uploads fail with 413",
        [
            U("users can't upload photos bigger than about 1 MB to the gallery, the app just says "
              "'upload failed'. smaller ones work"),
            A("A cutoff around 1 MB is nginx's default client_max_body_size. When a request body is "
              "larger, nginx answers 413 Request Entity Too Large before the request reaches your app, "
              "so the app logs show nothing. Does the error log on the proxy mention it?"),
            U("yes: client intended to send too large body: 4718592 bytes"),
            A("That's it. Set client_max_body_size 20m in the server block for the gallery (or only in "
              "the upload location), run nginx -t and reload. Also make the app show the real reason "
              "when it gets a 413, so people know to shrink the photo."),
            U("set it to 20m on the upload location and reloaded, 8 MB photos go through now"),
        ],
        {"prefix": "galle", "words": "intended large body", "vague": "nginx error log",
         "spread": "photos 413 reload"},
    ),
    needle(
        "d-birthday-party", "en", "signal", 7, "Dinosaur party for Leo's 7th birthday",
        [
            U("leo turns 7 on the 14th and wants a dinosaur party. 12 kids, our living room, budget "
              "around 150 dollars. ideas?"),
            A("A fossil dig is the hit at that age: bury plastic dinosaur skeletons in a tray of sand "
              "(or in the garden) and give each kid a paintbrush. Add a dino egg hunt with small toys "
              "inside plastic eggs, and a baking soda volcano for the finale. Two hours is plenty for "
              "12 seven-year-olds."),
            U("what about food, some kids have nut allergies"),
            A("Keep it nut-free throughout so nobody has to check labels: pizza, fruit skewers, popcorn, "
              "and a dinosaur cake you make from a plain sponge. Say 'nut-free' on the invitation so "
              "parents know."),
            U("ordered the sand and the eggs, invitations sent"),
        ],
        {"prefix": "fossi", "words": "nut allergies food", "vague": "kids party ideas",
         "spread": "leo volcano invitations"},
    ),
    # ----------------------------------------------------------------------- 8-30 days
    needle(
        "d-cron-timezone", "en", "slack", 11, "Weekly report cronjob an hour late since the clock change",
        [
            U("the weekly sales report used to land in everyone's inbox at 8:00 on monday, since the "
              "clocks went forward it arrives at 9:00"),
            T("terminal", {"command": "kubectl get cronjob weekly-sales-report -o jsonpath='{.spec.schedule}|{.spec.timeZone}'"},
              "0 7 * * 1|", say="Checking the schedule."),
            A("The schedule is 0 7 * * 1 with no timeZone, so it runs at 07:00 UTC. That was 08:00 for "
              "you in winter; since the clocks went forward you're on UTC+2, so the same instant is "
              "09:00 local."),
            U("can we make it follow local time instead of fixing it twice a year?"),
            A("Yes: since Kubernetes 1.27 a CronJob takes spec.timeZone. Set timeZone: Europe/Berlin "
              "and schedule 0 8 * * 1, and the scheduler handles daylight saving itself."),
            U("added the timezone field, next monday it should arrive at 8 again"),
        ],
        {"prefix": "dayli", "words": "weekly sales report", "vague": "cronjob schedule timezone",
         "spread": "monday utc berlin"},
    ),
    needle(
        "d-car-brakes", "en", "telegram", 13, "Squealing brakes on the Corolla",
        [
            U("my 2016 corolla squeals when I brake lightly, goes away when I press harder. 62,000 "
              "miles. should I worry?"),
            A("A light-braking squeal on a car that age is often the wear indicator, a small metal tab on "
              "the pad that touches the rotor when the pad is nearly worn out. It's designed to be "
              "annoying. Have the pads checked soon; if you hear grinding it's metal on metal and the "
              "rotors suffer."),
            U("the shop quoted 480 for front pads and rotors, is that fair?"),
            A("For a Corolla, front pads plus two rotors for 300 to 500 at an independent shop is "
              "normal; dealers charge more. Ask whether the rotors really need replacing or could be "
              "resurfaced, and ask to see the old pads."),
            U("they showed me the pads, 2 mm left. went ahead with it"),
        ],
        {"prefix": "squea", "words": "wear indicator pad", "vague": "front pads shop",
         "spread": "corolla grinding resurfaced"},
    ),
    needle(
        "d-postgres-vacuum", "en", "cli", 21, "Events table keeps growing after deletes",
        [
            U("we delete events older than 30 days every night but the events table on postgres is "
              "still 180 GB and the disk keeps growing"),
            T("terminal", {"command": "psql -c \"select n_dead_tup, last_autovacuum from pg_stat_user_tables where relname = 'events'\""},
              " n_dead_tup | last_autovacuum\n------------+-----------------\n  412003118 |\n(1 row)",
              say="How many dead rows are there?"),
            A("412 million dead tuples and autovacuum has never finished on it. DELETE only marks rows "
              "dead; the space is reused after a vacuum, and the file only shrinks with VACUUM FULL or "
              "pg_repack. On a table this size the default autovacuum settings can't keep up with a "
              "nightly delete of this many rows."),
            U("can we get the disk space back without locking the table for hours?"),
            A("Use pg_repack: it rebuilds the table online and takes a lock only for the final swap. "
              "Then stop the bloat at the source: partition events by day and drop old partitions "
              "instead of deleting rows. Dropping a partition is instant and leaves nothing to vacuum."),
            U("repack took 50 minutes and freed 140 GB. partitioning is next sprint"),
        ],
        {"prefix": "repac", "words": "dead tuples autovacuum", "vague": "postgres table disk",
         "spread": "nightly repack partition"},
        split_turn=3,
    ),
    needle(
        "d-spanish-practice", "en", "discord", 24, "Spanish subjunctive practice before the Madrid move",
        [
            U("I move to madrid in september for work. my spanish is b1 and the subjunctive still "
              "confuses me. can we practice a bit every day?"),
            A("Happy to. Rule of thumb: the subjunctive follows a trigger in the main clause (a wish, a "
              "doubt, an emotion) and a change of subject. 'Quiero que vengas' uses it: I want, and "
              "someone else comes. Translate: 'I hope you find a flat soon.'"),
            U("espero que encuentras un piso pronto"),
            A("Close! 'Espero' is a wish, so the verb after 'que' goes in the subjunctive: 'espero que "
              "encuentres un piso pronto'. Next: 'It's possible that it rains tomorrow.'"),
            U("es posible que llueva mañana"),
            A("Perfect, 'llueva' is right, you're spotting the triggers. Tomorrow let's do 'cuando' with "
              "the future: 'cuando llegue a Madrid' is one of the first sentences you'll need."),
            U("gracias! same time tomorrow"),
        ],
        {"prefix": "subjun", "words": "subjunctive still confuses", "vague": "practice every day",
         "spread": "madrid encuentres llueva"},
        split_turn=4,
    ),
    needle(
        "d-tax-1099", "en", "cli", 30, "Quarterly estimated taxes for freelance income",
        [
            U("I started freelancing in february next to my job. clients send me 1099-NEC forms. do I "
              "need to pay estimated taxes every quarter or is my paycheck withholding enough?"),
            A("If you'll owe more than $1,000 at filing after withholding, the IRS expects quarterly "
              "estimated payments, otherwise you may owe an underpayment penalty. Self-employment income "
              "also carries the 15.3% self-employment tax on top of income tax, which catches many "
              "first-year freelancers."),
            U("I expect about 30k from freelancing this year"),
            T("execute_code", {"code": "se = 30000 * 0.9235 * 0.153\nprint(round(se))"}, "4239",
              say="The self-employment tax alone:"),
            A("About 4,239 in self-employment tax, plus income tax at your marginal rate on the profit. "
              "The simple safe harbor: pay in at least 100% of last year's total tax (110% if your "
              "income was over 150k) through withholding and estimates, and you owe no penalty. You can "
              "also raise the withholding on your W-4 at the day job instead of sending quarterly "
              "payments."),
            U("raising the W-4 withholding sounds easier, I'll do that"),
        ],
        {"prefix": "freel", "words": "underpayment penalty owe", "vague": "income tax quarterly",
         "spread": "1099 penalty harbor"},
    ),
    # ----------------------------------------------------------------------- 31-90 days
    needle(
        "d-docker-layer-cache", "en", "tui", 33, "Docker build reinstalls every dependency on each change",
        [
            U("every docker build takes 9 minutes because pip reinstalls all the requirements, even when "
              "I only change one line of code"),
            T("read_file", {"path": "Dockerfile"},
              "FROM python:3.12-slim\nWORKDIR /app\nCOPY . .\nRUN pip install -r requirements.txt\n"
              "CMD [\"gunicorn\", \"app:app\"]", say="Reading the Dockerfile."),
            A("COPY . . comes before the pip install, so a change to any file invalidates the docker "
              "build cache for that layer and every layer after it, including the install. Copy "
              "requirements.txt on its own first, run pip install, and only then copy the rest of the "
              "source."),
            U("and a .dockerignore? the build context is 600 MB"),
            A("Yes, that's the other half: the context includes .git, node_modules and your local venv. "
              "Exclude them in .dockerignore and the context should shrink to a few MB, which also keeps "
              "files that don't matter from busting the layer cache."),
            U("reordered the copy and added the ignore file, rebuilds after a code change take 20 seconds"),
        ],
        {"prefix": "requir", "words": "build context 600", "vague": "docker build cache",
         "spread": "pip dockerignore reordered"},
    ),
    needle(
        "d-marathon-plan", "en", "whatsapp", 44, "Half marathon plan and a sore knee",
        [
            U("signed up for my first half marathon, it's in 12 weeks. I run 3 times a week, about 5k "
              "each. can you make me a plan?"),
            A("12 weeks is enough. Keep 3 runs a week: one easy, one with intervals or tempo, and one "
              "long run that grows from 6 km to 18 km by week 10, then taper for the last two weeks. "
              "Increase your total weekly distance by no more than about 10% a week."),
            U("week 4 and the outside of my right knee hurts after the long run"),
            A("Pain on the outside of the knee after long runs is often the IT band. Drop the next long "
              "run to 8 km, add hip and glute strength work twice a week (clamshells, side planks), and "
              "check your shoes' mileage. If it hurts while walking or gets sharper, see a physio."),
            U("the physio said IT band too, doing clamshells, long run back to 12 km without pain"),
        ],
        {"prefix": "clams", "words": "outside right knee", "vague": "long run week",
         "spread": "half taper physio"},
    ),
    needle(
        "d-tls-chain", "en", "discord", 52, "Android app rejects the renewed certificate",
        [
            U("after we renewed the certificate on api.example.org, iphones and browsers are fine but "
              "our android app fails with 'trust anchor for certification path not found'"),
            T("terminal", {"command": "openssl s_client -showcerts -connect api.example.org:443 </dev/null | grep ' s:'"},
              " 0 s:CN = api.example.org", say="How many certificates does the server send?"),
            A("The server sends only the leaf certificate, not the intermediate. Browsers and iOS fetch "
              "or cache a missing intermediate themselves, Android's HTTP stack doesn't, so it can't "
              "build the chain to a trusted root."),
            U("we pasted only cert.pem into the load balancer"),
            A("Use fullchain.pem (the leaf followed by the intermediate) instead, then check again with "
              "s_client: you should see two certificates in the chain. An SSL Labs scan also flags a "
              "missing intermediate as 'chain issues: incomplete'."),
            U("uploaded fullchain, android connects again"),
        ],
        {"prefix": "interm", "words": "trust anchor android", "vague": "certificate server missing",
         "spread": "iphones leaf fullchain"},
    ),
    needle(
        "d-apartment-lease", "en", "email", 63, "Questions about the new lease before signing",
        [
            U("I'm about to sign a 12-month lease. two clauses worry me: 'tenant shall pay for all "
              "repairs under $200' and an early termination fee of two months' rent. are these normal?"),
            A("Small-repairs clauses exist but vary by state, and some states don't let a landlord push "
              "repair costs onto the tenant. Many states also require a landlord to try to re-rent the "
              "unit if you leave early, which limits what they can charge. Which state is the apartment "
              "in?"),
            U("massachusetts"),
            A("In Massachusetts the landlord must keep the unit in good repair under the sanitary code, "
              "and you can't waive that by contract, so a clause making you pay for repairs is on shaky "
              "ground. A two-month termination fee is negotiable: ask to change it to one month, or to a "
              "clause that lets you sublet with their approval. I'm not a lawyer; a local tenant rights "
              "group can check the final text for free."),
            U("they agreed to one month and removed the repairs line"),
        ],
        {"prefix": "termin", "words": "early termination fee", "vague": "rent month clause",
         "spread": "lease massachusetts sublet"},
    ),
    needle(
        "d-log-noise", "en", "matrix", 71, "",
        [
            U("our logging bill tripled this month. which service is writing so much?"),
            T("terminal", {"command": "./bin/log-volume --env prod --since 24h --top 3"},
              "checkout-api   612 GB\nsearch          41 GB\nauth             9 GB",
              say="Volume by service for the last day:"),
            A("checkout-api writes 612 GB a day, fifteen times the next one. Its log level is DEBUG in "
              "production: someone set LOG_LEVEL=debug while chasing a payment bug last sprint and never "
              "set it back, so every request logs the full request and response payload."),
            U("oops, that was me. can we stop it happening again?"),
            A("Set the level back to info now. Then make the config refuse debug in production unless an "
              "expiry is given, or add an alert on daily log volume per service, so a forgotten debug "
              "flag shows up in a day instead of on the invoice."),
            U("level is info again and the volume alert is on the dashboard"),
        ],
        {"prefix": "tripl", "words": "logging bill month", "vague": "log volume alert",
         "spread": "checkout payload invoice"},
    ),
    needle(
        "d-dog-allergy", "en", "telegram", 88, "",
        [
            U("my dog keeps scratching and licking his paws, he's a 5 year old beagle. the vet ruled out "
              "fleas. could it be his food?"),
            A("Paw licking and itchy skin with no fleas is a classic sign of either an environmental "
              "allergy (pollen, dust mites) or a food allergy, most often to a protein like chicken or "
              "beef. The only reliable test for food is an elimination diet: 8 to 12 weeks on a single "
              "new protein, with no treats or table scraps."),
            U("his food is chicken and rice. what should I switch to?"),
            A("Pick a protein he has never eaten, like salmon, duck or venison, or a hydrolysed "
              "prescription diet your vet can order. Switch gradually over a week. If the itching stops "
              "and comes back when you reintroduce chicken, you have your answer."),
            U("vet agreed, he's on the duck diet since saturday"),
        ],
        {"prefix": "beagl", "words": "elimination diet weeks", "vague": "dog paws food",
         "spread": "fleas venison saturday"},
    ),
    # ----------------------------------------------------------------------- 91-180 days
    needle(
        "d-secret-leak", "en", "cli", 95, "API key pushed to the public repo",
        [
            U("I just realised I pushed a commit with our stripe secret key in settings.py to the public "
              "github repo two hours ago. what do I do first?"),
            A("Revoke the key first, before anything else: roll it in the Stripe dashboard so the leaked "
              "one stops working. Scrapers find keys on public repos within minutes, so treat it as "
              "already used. Removing the commit doesn't help, forks and caches keep it."),
            U("rolled it. should I still clean the history?"),
            T("terminal", {"command": "git log --oneline -S sk_live_ -- settings.py"},
              "a91c3e7 add payment settings", say="Which commits carry it?"),
            A("One commit. Rewrite it out with git filter-repo --replace-text, force push, and ask "
              "collaborators to re-clone. Then move the key into an environment variable and add a "
              "pre-commit secret scanner such as gitleaks so it can't happen again. Check the Stripe "
              "logs for requests you didn't make during those two hours."),
            U("no unknown requests in the logs, history rewritten and gitleaks runs in pre-commit now"),
        ],
        {"prefix": "gitle", "words": "stripe secret key", "vague": "public repo key",
         "spread": "leaked rewrite gitleaks"},
    ),
    needle(
        "d-resignation-letter", "en", "tui", 104, "Resignation letter to Marta",
        [
            U("I'm resigning to join another company. help me write a short, warm resignation letter to "
              "my manager marta. last day would be in four weeks, march 28"),
            A("Here's a draft:\n\nDear Marta,\n\nI'm writing to let you know that I'm resigning from my "
              "position as data analyst; my last day will be March 28. Thank you for the past three "
              "years and for everything you taught me, especially on the forecasting project. I'll make "
              "sure the handover is complete, including documentation of the weekly pipelines.\n\n"
              "Best regards,\nSam"),
            U("make it a bit less formal, we're close. and mention I'd like to stay in touch"),
            A("Hi Marta,\n\nI wanted you to hear it from me first: I've accepted a role at another "
              "company, and my last day will be March 28. These three years on your team have been the "
              "best of my career so far. I'll write up everything for the handover and make sure nothing "
              "falls through the cracks. I'd really like to stay in touch.\n\nThanks for everything,\nSam"),
            U("perfect, sending it after our 1:1 tomorrow"),
        ],
        {"prefix": "resig", "words": "less formal close", "vague": "write letter manager",
         "spread": "marta forecasting cracks"},
    ),
    needle(
        "d-queue-backpressure", "en", "slack", 118, "Thumbnail queue backs up every Monday morning",
        [
            U("every monday morning the thumbnail queue climbs to 300k messages and customers wait an "
              "hour for their previews"),
            A("Mondays are when the weekend's bulk imports land. You have a fixed 4 workers, each doing "
              "about 20 jobs a second, so a burst of 300k takes over an hour to drain. Scaling on CPU "
              "doesn't help because the workers mostly wait on storage."),
            U("so scale on what?"),
            A("On queue depth. With KEDA you can scale the worker deployment on the number of messages "
              "waiting: for example one replica per 5k messages, minimum 4, maximum 40."),
            T("terminal", {"command": "kubectl apply -f keda/thumbnail-scaledobject.yaml"},
              "scaledobject.keda.sh/thumbnail-worker created", say="Applying the ScaledObject."),
            U("it scaled to 40 and the database connections ran out"),
            A("Forty workers with a pool of 10 each is 400 connections, past the database's limit of "
              "300. Lower the pool per worker to 3 or put pgbouncer in front, and cap maxReplicaCount at "
              "what the database can take."),
            U("pool of 3 and max 30 replicas, this monday the queue was empty by 9:40"),
        ],
        {"prefix": "thumbn", "words": "queue depth scale", "vague": "database pool worker",
         "spread": "monday keda pgbouncer"},
        split_turn=5,
    ),
    needle(
        "d-yaml-norway", "en", "cli", 152, "Norway missing from the shipping countries",
        [
            U("customers in norway can't pick it at checkout anymore, every other country in the list "
              "works. nothing changed in the code, only the countries config"),
            T("read_file", {"path": "config/shipping.yaml"},
              "countries:\n  - SE\n  - DK\n  - FI\n  - NO\n  - IS", say="Reading the shipping config."),
            A("This is the YAML 'Norway problem': under YAML 1.1, which PyYAML follows, an unquoted NO is "
              "a boolean, so the list holds False instead of 'NO'. Your code then looks for 'NO' and "
              "never finds it."),
            U("wow. quote it?"),
            A("Quote every code ('NO', 'SE', ...) so nobody trips on it later, and add a test that loads "
              "the file and checks every entry is a two-letter string. Or load it with a YAML 1.2 parser "
              "such as ruamel.yaml, where only true and false are booleans."),
            U("quoted all of them and added the test, norway is back in the dropdown"),
        ],
        {"prefix": "norwa", "words": "unquoted boolean yaml", "vague": "config list customer",
         "spread": "checkout pyyaml dropdown"},
    ),
    needle(
        "d-budget-spreadsheet", "en", "cli", 167, "Household budget spreadsheet by category",
        [
            U("I export my bank transactions to transactions.csv every month. I want a sheet that sums "
              "spending per category per month, groceries, rent, eating out and so on"),
            T("read_file", {"path": "transactions.csv"},
              "date,description,amount,category\n03/02,LIDL 2231,-54.20,groceries\n"
              "03/02,RENT MARCH,-1250.00,rent\n03/04,PIZZERIA NAPOLI,-38.50,eating out",
              say="Looking at the export."),
            A("Your export already has a category column, so a pivot table does it without formulas: "
              "rows = category, columns = month of the date, values = sum of amount. If you prefer "
              "formulas, put months across row 1 and categories down column A and use "
              "SUMIFS(amount, category, $A2, month, B$1) with a helper column holding each date's month."),
            U("can it also warn me when eating out goes over 200 a month?"),
            A("Add a budget column next to the totals and a conditional formatting rule on the month "
              "cells: format red when the value is more negative than minus the budget, e.g. =B5<-$N5. "
              "Then eating out turns red as soon as it passes 200."),
            U("pivot table works and the red cells already caught march's pizza habit"),
        ],
        {"prefix": "sumif", "words": "eating out 200", "vague": "spending category month",
         "spread": "transactions pivot pizza"},
    ),
    needle(
        "d-export-504", "en", "tui", 178, "Big CSV exports end in a 504",
        [
            U("exports over about 50k rows come back as a 504 gateway timeout after exactly 60 seconds. "
              "small exports are fine"),
            A("Exactly 60 seconds points at the load balancer's idle timeout, not your app: the app is "
              "still building the CSV when the balancer gives up on the connection. Raising gunicorn's "
              "timeout won't help while the balancer cuts at 60."),
            U("should I just raise the balancer timeout to 10 minutes?"),
            A("You could, but a request that long will fail again at the next size. Better: make the "
              "export a background job. The endpoint returns 202 with a job id, a worker writes the "
              "file to the bucket, and the user gets an email with a signed link when it's ready."),
            T("write_file", {"path": "app/exports/tasks.py",
                             "content": "def build_export(job_id):\n    rows = query_rows(job_id)\n"
                                        "    url = upload_file(rows)\n    send_ready_email(job_id, url)\n"},
              "wrote 4 lines to app/exports/tasks.py", say="A first version of the task:"),
            U("shipped it, a 400k row export took 3 minutes and the email arrived"),
        ],
        {"prefix": "expor", "words": "504 gateway timeout", "vague": "worker bucket email",
         "spread": "csv balancer signed"},
    ),
    # ----------------------------------------------------------------------- 181-360 days
    needle(
        "d-replica-lag", "en", "signal", 238, "Saved settings appear to revert for a moment",
        [
            U("users say that after they save their profile settings, the page shows the old values, "
              "and a refresh a second later shows the new ones"),
            A("That's read-after-write against a replica. The save goes to the primary, and the redirect "
              "right after it reads from a postgres replica that is a few hundred milliseconds behind, so "
              "for a moment it serves the old row."),
            U("replica lag is usually 200-500 ms in the dashboards"),
            A("Then route a user's reads to the primary for a few seconds after they write: set a "
              "short-lived cookie on save and have the router send that session's queries to the "
              "primary while it's present. Everything else keeps reading from replicas."),
            U("added a 5 second sticky-primary cookie, no more reverting"),
        ],
        {"prefix": "rever", "words": "profile settings old", "vague": "cookie session replica",
         "spread": "refresh milliseconds sticky"},
    ),
    needle(
        "d-guitar-barre", "en", "discord", 262, "F barre chord keeps buzzing",
        [
            U("been learning guitar for two months, everything's fine until the F barre chord. the b and "
              "high e strings buzz or go dead no matter how hard I press"),
            A("Pressing harder is the usual trap. Roll your index finger slightly onto its bony outer "
              "edge, keep it just behind the fret, and pull a little with your arm instead of squeezing "
              "with the thumb. Dead strings usually sit under a crease of the finger, so slide it up or "
              "down a few millimetres."),
            U("my hand hurts after 5 minutes of trying"),
            A("That's normal at two months, but stop when it hurts. Practise the shape in short bursts "
              "through the day, and start with the small F (only the top four strings) or move the barre "
              "up to the 5th fret where the action is lower. Having a shop check the guitar's action is "
              "worth it too: high action on cheap guitars makes barre chords much harder."),
            U("the shop lowered the action, the F rings clean most of the time now"),
        ],
        {"prefix": "bar", "words": "strings buzz dead", "vague": "guitar months chord",
         "spread": "crease bursts lowered"},
    ),
    needle(
        "d-dependency-pin", "en", "cli", 315, "CI broke overnight on a transitive dependency",
        [
            U("CI went red overnight on main with no commits since yesterday. ImportError: cannot import "
              "name 'url_quote' from 'werkzeug.urls'"),
            A("Nothing of yours changed, so a dependency did: Werkzeug 3.0 came out and removed "
              "url_quote. Your requirements pin Flask 2.2 but not Werkzeug, and Flask 2.2 accepts any "
              "Werkzeug from 2.2 up, so the fresh install picked 3.0."),
            T("terminal", {"command": "pip index versions werkzeug | head -2"},
              "werkzeug (3.0.0)\nAvailable versions: 3.0.0, 2.3.7, 2.3.6, 2.3.5", say="Latest releases:"),
            U("quick fix for today and a real fix?"),
            A("Today: pin werkzeug==2.3.7 in requirements. The real fix is a lock file for everything the "
              "build installs, transitive dependencies included: pip-compile from pip-tools writes exact "
              "versions with hashes, and a bot opens a pull request when there's an upgrade, so upgrades "
              "happen on purpose."),
            U("pinned werkzeug, CI green. the pip-tools lock file was merged this afternoon"),
        ],
        {"prefix": "werkz", "words": "cannot import url", "vague": "upgrade lock file",
         "spread": "overnight flask compile"},
        split_turn=3,
    ),
    needle(
        "d-passport-renewal", "en", "whatsapp", 341, "Renewing the passport before the Japan trip",
        [
            U("my passport expires in august and we fly to tokyo on june 2. japan needs it valid for the "
              "whole stay, right? how fast can I renew?"),
            A("Japan only requires it to be valid for the length of your stay, but airlines sometimes "
              "apply stricter rules, so renewing is wise. Routine renewal by mail takes around 6-8 weeks; "
              "expedited (for an extra fee) 2-3 weeks. With June 2 ahead you have time for routine if "
              "you send it this week, or go expedited to be safe."),
            U("my old photo is 9 years old, can I reuse it?"),
            A("No: the photo must be taken within the last six months. Many pharmacies take passport "
              "photos in a few minutes. Remember to include your current passport; it's returned "
              "separately."),
            U("sent it expedited on monday. how do I track it?"),
            A("You can check the application status online about two weeks after mailing; before that "
              "it usually shows as not found. Keep the tracking number of your envelope too."),
            U("status says approved, new passport arrives next week"),
        ],
        {"prefix": "passp", "words": "routine renewal mail", "vague": "old photo years",
         "spread": "tokyo pharmacies approved"},
        split_turn=4,
    ),
]

CJK_D = [
    # ----------------------------------------------------------------------- Chinese
    needle(
        "d-zh-redis-memory", "zh", "cli", 6, "Redis 内存占满导致写入失败",
        [
            U("线上 Redis 的内存用满了，写入开始报 OOM command not allowed，应用那边大量超时。"),
            T("terminal", {"command": "redis-cli info memory | grep -E 'used_memory_human|maxmemory_human|maxmemory_policy'"},
              "used_memory_human:7.98G\nmaxmemory_human:8.00G\nmaxmemory_policy:noeviction",
              say="先看一下内存和淘汰策略。"),
            A("内存已经到了 maxmemory 上限，而淘汰策略是 noeviction，所以满了以后所有写入都会被拒绝。"
              "再查一下是不是有很多键没有设置过期时间。"),
            U("扫了一下，会话相关的键有两千多万个，都没有过期时间。"),
            A("问题就在这里：会话键应该设置过期时间，比如 7 天。先用脚本分批给现有的会话键加上 TTL，代码里写入时用 "
              "SET key value EX 604800。淘汰策略可以改成 volatile-lru，只淘汰有过期时间的键，避免误删重要数据。"),
            U("加上过期时间后内存降到 3G 了，写入恢复正常。"),
        ],
        {"prefix": "淘汰", "words": "会话 过期时间", "vague": "内存 写入 超时",
         "spread": "noeviction 会话键 恢复"},
        split_turn=3,
    ),
    needle(
        "d-zh-scheduled-dup", "zh", "telegram", 9, "定时任务在两台机器上重复执行",
        [
            U("每天凌晨的对账定时任务执行了两次，生成了两份对账文件，财务那边很困惑。"),
            A("服务扩容到两台机器以后，每台机器上的调度器都会按同样的时间触发任务，所以任务跑了两次。"
              "需要保证同一时间只有一个实例在执行。"),
            U("有什么简单的做法？我们已经有 Redis 了。"),
            A("可以用 Redis 做分布式锁：任务开始前执行 SET lock:reconcile <实例ID> NX EX 600，拿到锁的实例才执行，"
              "拿不到的直接跳过。锁的过期时间要比任务最长耗时长一些，结束后只删除自己持有的锁。"),
            U("加了分布式锁，今天凌晨只生成了一份对账文件。"),
        ],
        {"prefix": "对账", "words": "分布式锁 跳过", "vague": "任务 执行 两次",
         "spread": "财务 扩容 一份"},
    ),
    needle(
        "d-zh-wedding-gift", "zh", "whatsapp", 17, "大学室友婚礼的份子钱和祝福",
        [
            U("大学室友下个月在成都结婚，我去不了现场，份子钱给多少合适？还想写几句祝福。"),
            A("如果关系很好，人不到场也可以包 600 到 1000，具体看当地的习惯和你们的交情。转账的时候附上一段祝福，"
              "比只发红包更有心意。"),
            U("我们是上下铺，四年都住一起，帮我写一段吧，别太肉麻。"),
            A("可以这样写：“四年上下铺，从熄灯后的卧谈到毕业那天的散伙饭，很多事都还记得。没能到成都现场见证你们的"
              "婚礼很遗憾，祝你们新婚快乐，以后的日子平平淡淡也热热闹闹。等你们回北京，我请你们吃饭！”"),
            U("太好了，发了 888 的红包加这段话，他说很感动。"),
        ],
        {"prefix": "份子", "words": "上下铺 肉麻", "vague": "结婚 祝福 合适",
         "spread": "室友 熄灯 888"},
    ),
    needle(
        "d-zh-tax-refund", "zh", "tui", 80, "个税年度汇算退税",
        [
            U("今年第一次做个税年度汇算，APP 上显示可以退 1260 元，但是我去年换过工作，会不会算错？"),
            A("换工作的人最常见的情况其实是要补税：两家公司各自按全年预扣，每家都扣除了每月 5000 元的基本减除费用，"
              "汇算时合并计算可能需要补税。你显示的是退税，一般是因为专项附加扣除没有在单位填报。你有房贷、租房或者"
              "子女教育吗？"),
            U("有租房，去年没在公司填，这次在 APP 里补填了住房租金。"),
            A("那就对了：住房租金扣除在汇算时补填，多预扣的税就会退回来。提交前核对一下收入纳税明细里两家公司的收入"
              "是否都在，确认无误再提交，退税一般几个工作日到账。"),
            U("明细核对过了，两家都有，已经提交，等着到账。"),
        ],
        {"prefix": "汇算", "words": "住房租金 补填", "vague": "换工作 退税 公司",
         "spread": "1260 专项附加扣除 到账"},
    ),
    needle(
        "d-zh-slow-query", "zh", "cli", 127, "订单列表翻到后面很慢",
        [
            U("后台订单列表翻到第 5000 页的时候，接口要 8 秒才返回，前几页很快。"),
            T("terminal", {"command": "mysql -e \"EXPLAIN SELECT * FROM orders ORDER BY created_at DESC LIMIT 100000, 20\""},
              "id  select_type  table   type   rows     Extra\n1   SIMPLE       orders  index  100020   NULL",
              say="看一下执行计划。"),
            A("这是深分页的问题：LIMIT 100000, 20 需要先扫描并丢弃前面十万行，页数越往后越慢。索引本身没问题，"
              "问题在 OFFSET。"),
            U("那怎么改？产品还想保留跳页。"),
            A("最好改成游标分页：记住上一页最后一条的 created_at 和 id，下一页用 WHERE (created_at, id) < (?, ?) "
              "查询，速度和第一页一样。如果必须跳页，可以限制最多翻到前 100 页，再往后让用户用搜索条件缩小范围。"),
            U("改成游标分页以后，翻到多少页都在 50 毫秒以内。"),
        ],
        {"prefix": "游标", "words": "深分页 丢弃", "vague": "订单 接口 返回",
         "spread": "5000 跳页 毫秒"},
    ),
    needle(
        "d-zh-braised-pork", "zh", "telegram", 190, "第一次做红烧肉",
        [
            U("第一次在家做红烧肉，上次做的肉又柴又腻，颜色也不好看，问题出在哪里？"),
            A("常见原因有三个：选了太瘦的肉、没有焯水、炖的时间太短。选带皮的五花肉，冷水下锅焯水去腥，再用冰糖"
              "小火炒出糖色，颜色就会红亮。加开水后小火炖一个小时左右，肉才会软糯。"),
            U("一定要冰糖吗？家里只有白糖。"),
            A("白糖也可以，只是糖色更容易炒糊，火要更小，糖化成枣红色马上下肉。最后大火收汁，汤汁变稠就关火。"),
            U("按这个做了，炖了一个小时，家人都说比饭店的还好吃。"),
        ],
        {"prefix": "红烧", "words": "焯水 五花肉", "vague": "肉 颜色 好看",
         "spread": "又柴又腻 枣红色 饭店"},
    ),
    # ----------------------------------------------------------------------- Japanese
    needle(
        "d-ja-docker-disk", "ja", "cli", 3, "ビルドサーバーのディスクが一杯",
        [
            U("ビルドサーバーのディスクが一杯になって、CI のジョブが全部失敗しています。"),
            T("terminal", {"command": "docker system df"},
              "TYPE            TOTAL     ACTIVE    SIZE      RECLAIMABLE\n"
              "Images          412       6         187GB     181GB (96%)\n"
              "Build Cache     2930      0         96GB      96GB",
              say="Docker の使用量を確認します。"),
            A("古いイメージが 181GB、ビルドキャッシュが 96GB あって、ほとんど削除できます。毎回新しいタグでビルド"
              "しているのに、古いイメージを消す処理がないのが原因です。"),
            U("今すぐ消しても大丈夫ですか？"),
            A("実行中のコンテナが使っているイメージは消されないので、docker image prune -a と docker builder prune "
              "で大丈夫です。再発防止に、毎晩 until=168h を付けて一週間より古いものを消す cron を入れましょう。"),
            U("prune で 270GB 空きました。cron も設定しました。"),
        ],
        {"prefix": "再発", "words": "古いイメージ 処理", "vague": "ディスク ジョブ 失敗",
         "spread": "ビルドサーバー 一週間 270gb"},
    ),
    needle(
        "d-ja-kyoto-autumn", "ja", "telegram", 28, "京都の紅葉旅行プラン",
        [
            U("11月の後半に2泊3日で京都へ紅葉を見に行く予定です。混雑がひどいと聞きましたが、どう回ればいいですか？"),
            A("人気の東福寺や永観堂は朝8時の開門直後が一番空いています。1日目の朝に東福寺、昼は伏見稲荷、2日目は"
              "早朝に嵐山の竹林を歩いてから常寂光寺へ、というように、有名な場所は朝一番に回すのがコツです。"),
            U("夜のライトアップも見たいです。"),
            A("永観堂と清水寺のライトアップがおすすめです。ただし夕方から長い列ができるので、整理券や事前予約が必要な"
              "寺もあります。公式サイトで確認してください。移動はバスより電車と徒歩のほうが確実です。"),
            U("2日目の夜に永観堂のライトアップを予約しました。"),
        ],
        {"prefix": "紅葉", "words": "早朝 竹林", "vague": "京都 混雑",
         "spread": "11月 整理券 予約しました"},
    ),
    needle(
        "d-ja-moving", "ja", "signal", 215, "大阪から横浜への引っ越し手続き",
        [
            U("来月、大阪から横浜に引っ越します。役所の手続きで忘れやすいものを教えてください。"),
            A("市区町村をまたぐ引っ越しなので、まず大阪の区役所で転出届を出して転出証明書をもらい（マイナンバーカード"
              "があればオンラインでも可）、引っ越し後14日以内に横浜の区役所で転入届を出します。同じ窓口で国民健康保険"
              "や児童手当の手続きも必要なら一緒に済ませましょう。"),
            U("運転免許証の住所変更はどこでしますか？"),
            A("横浜の住所を管轄する警察署か運転免許センターで、新しい住民票かマイナンバーカードを持って行けばその場で"
              "裏書きしてもらえます。郵便局の転送届も忘れずに。旧住所宛ての郵便が1年間転送されます。"),
            U("転出届はオンラインで済ませました。転送届も出しました。"),
        ],
        {"prefix": "転出", "words": "運転免許証 住所変更", "vague": "引っ越し 手続き 忘れ",
         "spread": "大阪 裏書き 済ませました"},
    ),
    needle(
        "d-ja-ci-token", "ja", "slack", 289, "CI のデプロイ用トークン期限切れ",
        [
            U("今朝から main へのマージ後のデプロイが全部 401 で失敗しています。コードは何も変えていません。"),
            A("401 なので認証の問題です。CI に登録しているデプロイ用のアクセストークンの有効期限を確認してください。"
              "個人アカウントで発行したトークンは 90 日で切れる設定のことが多いです。"),
            U("発行した人のアカウントを見たら、昨日で期限が切れていました。"),
            A("新しいトークンを発行して CI のシークレットを更新すれば今日は直ります。ただ、個人のトークンだとその人が"
              "退職したときにも止まるので、サービスアカウントか OIDC 連携に移すのがおすすめです。"),
            U("OIDC にすると何が変わりますか？"),
            A("CI が実行のたびに短命のトークンを受け取るので、長期間有効なシークレットを保存する必要がなくなります。"
              "期限切れも漏洩の心配もほぼなくなります。"),
            U("OIDC 連携に切り替えて、シークレットは削除しました。デプロイも通っています。"),
        ],
        {"prefix": "期限", "words": "個人アカウント 発行", "vague": "デプロイ 失敗 コード",
         "spread": "401 退職 短命"},
        split_turn=4,
    ),
    # ----------------------------------------------------------------------- Korean
    needle(
        "d-ko-oom-worker", "ko", "cli", 7, "워커 컨테이너 OOMKilled 반복",
        [
            U("이미지 처리 워커 컨테이너가 하루에 몇 번씩 OOMKilled 상태로 죽어요. 메모리 제한은 1Gi예요."),
            T("terminal", {"command": "kubectl top pod -l app=image-worker --containers"},
              "POD                           NAME     CPU(cores)   MEMORY(bytes)\n"
              "image-worker-5c7d9b8f4-q2w8n   worker   410m         983Mi",
              say="지금 메모리 사용량을 볼게요."),
            A("평소에도 983Mi로 제한에 거의 붙어 있어요. 큰 PNG를 한꺼번에 여러 장 디코딩하면 순간적으로 1Gi를 넘겨서 "
              "커널이 프로세스를 종료하는 것 같아요. 동시에 처리하는 작업 수가 몇 개죠?"),
            U("동시성이 8로 설정돼 있어요."),
            A("동시성을 4로 줄이고, 이미지를 열기 전에 크기를 확인해서 너무 큰 파일은 축소 모드로 디코딩하세요. "
              "그래도 부족하면 메모리 제한을 2Gi 정도로 올리는 게 맞아요."),
            U("동시성을 4로 줄였더니 이틀째 재시작 없이 돌고 있어요."),
        ],
        {"prefix": "동시", "words": "디코딩 커널", "vague": "메모리 제한 컨테이너",
         "spread": "oomkilled 2gi 이틀째"},
    ),
    needle(
        "d-ko-cache-stampede", "ko", "slack", 38, "캐시 만료 순간 DB 부하 폭증",
        [
            U("매시 정각마다 메인 페이지 응답이 3초 넘게 느려지고 데이터베이스 CPU 사용률이 100%까지 올라가요."),
            A("정각에 캐시가 한꺼번에 만료되면서, 수백 개 요청이 동시에 데이터베이스로 같은 쿼리를 보내는 캐시 "
              "스탬피드 현상이에요. 메인 페이지 캐시를 모두 TTL 3600초로, 같은 시각에 채웠다면 정확히 그렇게 돼요."),
            U("어떻게 막을 수 있어요?"),
            A("세 가지를 같이 쓰면 좋아요. TTL에 랜덤 지터를 더해서 만료 시각을 흩어 놓고, 캐시를 다시 채우는 요청은 "
              "락으로 하나만 보내고, 나머지는 잠깐 이전 값을 돌려주세요. 만료 전에 백그라운드에서 미리 갱신하는 "
              "방법도 있어요."),
            U("지터랑 락을 넣었더니 정각 스파이크가 사라졌어요."),
        ],
        {"prefix": "스탬", "words": "랜덤 지터", "vague": "캐시 데이터베이스 요청",
         "spread": "cpu 백그라운드 스파이크"},
    ),
    needle(
        "d-ko-kimchi-stew", "ko", "telegram", 99, "",
        [
            U("김치찌개를 끓였는데 맛이 밍밍하고 깊은 맛이 안 나요. 김치는 산 지 일주일 된 거예요."),
            A("일주일 된 김치는 아직 덜 익어서 신맛과 감칠맛이 부족해요. 잘 익은 신김치를 쓰는 게 제일 중요하고, "
              "없으면 김치 국물을 넉넉히 넣고 설탕을 아주 조금 넣어 보세요. 돼지고기 앞다리살이나 목살을 김치와 함께 "
              "참기름에 먼저 볶으면 맛이 훨씬 깊어져요."),
            U("멸치 육수를 써도 돼요?"),
            A("네, 멸치 다시마 육수를 쓰면 훨씬 좋아요. 물 대신 육수를 붓고 중약불에서 20분 이상 끓이세요. 두부와 "
              "파는 마지막 5분에 넣으세요."),
            U("볶고 육수로 끓였더니 식당 맛이 나요!"),
        ],
        {"prefix": "김치", "words": "신김치 국물", "vague": "맛이 깊은",
         "spread": "밍밍 다시마 식당"},
    ),
    needle(
        "d-ko-job-interview", "ko", "discord", 360, "이직 면접 준비와 연봉 협상",
        [
            U("다음 주에 핀테크 회사 백엔드 개발자 최종 면접이 있어요. 마지막에 연봉 얘기가 나올 것 같은데 어떻게 "
              "대답해야 할지 모르겠어요."),
            A("먼저 희망 연봉을 숫자로 정해 두세요. 현재 연봉, 시장 시세, 이직으로 잃는 것(성과급, 스톡옵션)을 "
              "고려해서 범위를 정하고, 먼저 말해야 하면 범위의 위쪽으로 말하는 게 좋아요."),
            U("지금 6200이고 성과급이 연 800 정도 나와요."),
            A("그럼 기본급 기준으로 7000에서 7500 사이를 제시하고, 성과급을 포기하는 걸 근거로 드세요. '현재 총보상이 "
              "7000 수준이라 그 이상을 기대합니다'처럼 말하면 설득력이 있어요."),
            U("기술 질문도 연습하고 싶어요. 결제 시스템에서 중복 결제를 어떻게 막나요?"),
            A("멱등성 키를 쓰는 게 핵심이에요. 클라이언트가 결제 요청마다 고유 키를 보내고, 서버는 같은 키로 온 요청은 "
              "처음 결과를 그대로 돌려줘요. 데이터베이스에 그 키로 유니크 제약을 걸면 동시에 들어와도 한 번만 처리돼요."),
            U("면접 잘 봤어요! 7300으로 오퍼 받았어요."),
        ],
        {"prefix": "멱등", "words": "희망 연봉 숫자", "vague": "면접 연봉 대답",
         "spread": "핀테크 성과급 오퍼"},
        split_turn=4,
    ),
]

NEEDLES_D: list[Needle] = EN_D + CJK_D

#: The conversations about what the generated corpus also talks about (the other half are a
#: person's everyday questions). The English ones' vague queries are words the generator writes,
#: checked by tests/bench/test_relevance_needle_sets.py.
CORPUS_TOPICS = frozenset({
    "d-celery-visibility", "d-nginx-413", "d-cron-timezone", "d-postgres-vacuum",
    "d-docker-layer-cache", "d-tls-chain", "d-log-noise", "d-secret-leak", "d-queue-backpressure",
    "d-yaml-norway", "d-export-504", "d-replica-lag", "d-dependency-pin",
    "d-zh-redis-memory", "d-zh-scheduled-dup", "d-zh-slow-query",
    "d-ja-docker-disk", "d-ja-ci-token", "d-ko-oom-worker", "d-ko-cache-stampede",
})

#: The full size the model checks (40 conversations, every age bucket four times and more).
validate(NEEDLES_D, min_needles=40, min_cjk=14)
