"""ACL 1.0 ("plain ACL") on the broker: plain_acl.yml accounts, AK/SK signatures, per-resource permissions."""
