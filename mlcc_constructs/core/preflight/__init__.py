"""``mlcc preflight``'s rules: what the app needs from the account (:mod:`.needs`, the one
module that reads deployment specs), the plain AWS facts the shell gathers (:mod:`.facts`), the
checks over both (:mod:`.quotas`, :mod:`.checks`) and their findings (:mod:`.findings`)."""
