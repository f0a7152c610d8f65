-- Placeholder on branch wp-feed only: number 0014 belongs to the endpoint rate migration of branch
-- wp-rate, which lands first. The runner refuses a gap, so this branch holds the number with an
-- empty step until that merge, which takes wp-rate's file in its place. It changes nothing.
SELECT 1;
