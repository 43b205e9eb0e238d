# One "user:bcrypt-hash" line per user; bcrypt comes with the server.
add_user() {
    python3 -c 'import sys, bcrypt
print(sys.argv[1] + ":" + bcrypt.hashpw(sys.argv[2].encode(),
                                        bcrypt.gensalt()).decode())' "$1" "$2"
}
add_user operator operator-secret > htpasswd
add_user alice alice-secret >> htpasswd
